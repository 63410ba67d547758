"""The diagnostic-code catalogue against the code that emits: every code a module can emit is
declared (``CODES`` of its layer or its format's ``FORMAT.codes``), and every declared code
can be emitted.

An AST scan finds each place a code is passed: the ``code`` argument of ``error()``,
``warning()``, ``Diagnostic()``, of any function or method with a ``code`` parameter (such
as ``load_json_object`` or a reader's own ``fail(message, code)``), and every ``code=``
keyword (``replace(d, code=…)``). A code that is not a literal is resolved as far as the
source allows:

* the enclosing function's own ``code`` parameter: forwarded, its callers are scanned;
* ``something.code``: an existing diagnostic's code, passed on;
* an f-string (``f"{prefix}.encoding"``): a pattern, which must match declared codes;
* anything else (a loop variable, a lookup in a table): the code-shaped literals of that
  expression, of the module-level tables it names and of the enclosing function. A site
  with none is unresolved and fails ``test_every_dynamic_code_resolves``: write its values
  out as literals.

The runtime half is in ``conftest.py``: a test that makes a diagnostic with an undeclared
code fails.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from dcx.cli.catalogue import LAYER_MODULES, catalogue, declarations
from dcx.converters.registry import FORMATS
from dcx.core.diagnostics import Diagnostic, error
from dcx.parsing.schemas import SCHEMA_KEYWORD_CODES

if TYPE_CHECKING:
    from tests.conftest import CodeRecorder

REPO = Path(__file__).resolve().parent.parent
LAYER_FOLDERS = ("core", "parsing", "converters", "scheduler", "experiments", "cli")
FORMAT_FOLDER = "formats"
CODE_SHAPE = re.compile(r"^[a-z][a-z0-9-]*(\.[A-Za-z0-9-]+)+$")
"""``json.duplicate-key``, ``sss.write.out-of-range``; JSON Schema keywords keep their case
(``schema.additionalProperties``)."""

Kind = Literal["literal", "candidates", "pattern", "forwarded", "passed-on", "unresolved"]


@dataclass(frozen=True)
class CodeSite:
    """One place a code is passed to something that makes a diagnostic."""

    path: str
    """Relative to the repository: ``formats/sss.py``."""
    line: int
    kind: Kind
    codes: tuple[str, ...] = ()
    """The literal, or the candidates of a computed code."""
    pattern: str = ""
    """For an f-string: the code with ``{…}`` where a value goes."""
    source: str = ""

    def matches(self, code: str) -> bool:
        if self.kind == "pattern":
            parts = (re.escape(part) for part in self.pattern.split("{…}"))
            return re.fullmatch("[A-Za-z0-9-]+".join(parts), code) is not None
        return code in self.codes

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source}"


# ------------------------------------------------------------------------------ the scan


def _module_files(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def _code_position(function: ast.FunctionDef | ast.AsyncFunctionDef,
                   method: bool) -> int | None:
    """Where ``code`` goes among the positional arguments of a call; ``-1`` when it is
    keyword-only, ``None`` when the function takes no code."""
    names = [argument.arg for argument in (*function.args.posonlyargs, *function.args.args)]
    if method and names and names[0] in ("self", "cls"):
        names = names[1:]
    if "code" in names:
        return names.index("code")
    if any(argument.arg == "code" for argument in function.args.kwonlyargs):
        return -1
    return None


@dataclass
class _Callables:
    """Callables by name and where their ``code`` argument goes (``None``: they take none)."""

    functions: dict[str, int | None]
    methods: dict[str, int | None]


def _callables(tree: ast.Module) -> _Callables:
    found = _Callables({}, {})
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    method_nodes = {id(item) for cls in classes for item in cls.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            method = id(node) in method_nodes
            table = found.methods if method else found.functions
            position = _code_position(node, method)
            if table.get(node.name) is None:  # a name defined twice: any that takes a code
                table[node.name] = position
    return found


@cache
def _shared_callables() -> _Callables:
    """What every module may call: the code-taking helpers of ``core`` and ``parsing``
    (``error``, ``load_json_object``, ``JsonLocator.token_diagnostic``) and the
    ``Diagnostic`` constructor."""
    shared = _Callables({"Diagnostic": 2}, {})
    for folder in ("core", "parsing"):
        for path in _module_files(folder):
            mine = _callables(_parsed(path))
            shared.functions.update({k: v for k, v in mine.functions.items() if v is not None})
            shared.methods.update({k: v for k, v in mine.methods.items() if v is not None})
    return shared


def _aliases(tree: ast.Module, positions: dict[str, int | None]) -> dict[str, int]:
    """Names bound to code-taking functions: ``report = error if strict else warning``."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        choices = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
        if not all(isinstance(choice, ast.Name) for choice in choices):
            continue
        taken = {positions.get(choice.id) for choice in choices if isinstance(choice, ast.Name)}
        if len(taken) == 1 and (position := taken.pop()) is not None:
            found[node.targets[0].id] = position
    return found


def _code_shaped(node: ast.AST) -> list[str]:
    return [item.value for item in ast.walk(node)
            if isinstance(item, ast.Constant) and isinstance(item.value, str)
            and CODE_SHAPE.match(item.value)]


def _pattern(node: ast.JoinedStr) -> str:
    return "".join(str(part.value) if isinstance(part, ast.Constant) else "{…}"
                   for part in node.values)


class _Scanner(ast.NodeVisitor):
    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.sites: list[CodeSite] = []
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        mine, shared = _callables(tree), _shared_callables()
        self.function_positions = {**shared.functions, **mine.functions}
        self.method_positions = {**shared.methods, **mine.methods}
        self.function_positions.update(_aliases(tree, self.function_positions))
        self.tables = {target.id: node.value for node in tree.body
                       if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
                       for target in (node.targets if isinstance(node, ast.Assign)
                                      else [node.target])
                       if isinstance(target, ast.Name)}

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node)
        self.generic_visit(node)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        for argument in self._code_arguments(node):
            self.sites.append(self._site(argument))
        self.generic_visit(node)

    def _code_arguments(self, call: ast.Call) -> list[ast.expr]:
        keyword = [item.value for item in call.keywords if item.arg == "code"]
        if keyword:
            return keyword
        if isinstance(call.func, ast.Name):
            position = self.function_positions.get(call.func.id)
        elif isinstance(call.func, ast.Attribute):
            position = self.method_positions.get(call.func.attr)
        else:
            position = None
        if position is None or position < 0 or position >= len(call.args):
            return []
        argument = call.args[position]
        return [] if isinstance(argument, ast.Starred) else [argument]

    def _site(self, argument: ast.expr) -> CodeSite:
        def site(kind: Kind, codes: tuple[str, ...] = (), pattern: str = "") -> CodeSite:
            return CodeSite(self.path, argument.lineno, kind, codes, pattern,
                            ast.unparse(argument))

        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            return site("literal", (argument.value,))
        function = self.functions[-1] if self.functions else None
        parameters = ({item.arg for item in ast.walk(function.args) if isinstance(item, ast.arg)}
                      if function is not None else set())
        if isinstance(argument, ast.Name) and argument.id == "code" and "code" in parameters:
            return site("forwarded")
        if isinstance(argument, ast.Attribute) and argument.attr == "code":
            return site("passed-on")
        if isinstance(argument, ast.JoinedStr):
            return site("pattern", pattern=_pattern(argument))
        # filtered to code namespaces once every module is scanned (``all_sites``)
        candidates = _code_shaped(argument)
        names = {item.id for item in ast.walk(argument) if isinstance(item, ast.Name)}
        for name in names & self.tables.keys():
            candidates += _code_shaped(self.tables[name])
        if function is not None and names - parameters - self.tables.keys():
            # a local variable: any code the function writes or looks up in a table
            candidates += _code_shaped(function)
            looked_up = {item.id for item in ast.walk(function) if isinstance(item, ast.Name)}
            for name in looked_up & self.tables.keys():
                candidates += _code_shaped(self.tables[name])
        return site("candidates", tuple(dict.fromkeys(candidates)))


@cache
def all_sites() -> tuple[CodeSite, ...]:
    """Every site of every scanned module. A computed code's candidates keep only strings
    whose first part (``json``, ``sss``) some literal code or declaration has: that tells a
    code from a file or module name among a function's literals."""
    found: list[CodeSite] = []
    for path in (path for folder in (*LAYER_FOLDERS, FORMAT_FOLDER)
                 for path in _module_files(folder)):
        scanner = _Scanner(path.relative_to(REPO).as_posix(), _parsed(path))
        scanner.visit(_parsed(path))
        found += scanner.sites
    literal = [code for site in found if site.kind == "literal" for code in site.codes]
    namespaces = {code.split(".", 1)[0] for code in (*literal, *catalogue())}
    resolved = []
    for site in found:
        if site.kind == "candidates":
            codes = tuple(code for code in site.codes if code.split(".", 1)[0] in namespaces)
            site = replace(site, codes=codes, kind="candidates" if codes else "unresolved")
        resolved.append(site)
    return tuple(resolved)


@cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def sites_under(*folders: str) -> Iterator[CodeSite]:
    return (site for site in all_sites() if site.path.split("/", 1)[0] in folders)


def sites_in(path: Path) -> Iterator[CodeSite]:
    relative = path.relative_to(REPO).as_posix()
    return (site for site in all_sites() if site.path == relative)


def _undeclared(sites: Iterator[CodeSite]) -> list[str]:
    declared = catalogue()
    problems = []
    for site in sites:
        if site.kind == "pattern":
            if not any(site.matches(code) for code in declared):
                problems.append(f"{site}: no declared code matches {site.pattern!r}")
            continue
        shown = f"{site.path}:{site.line}" + ("" if site.kind == "literal" else
                                                f" (computed: {site.source})")
        problems += [f"{shown}: {code}" for code in site.codes if code not in declared]
    return problems


# ------------------------------------------------------------------------------ declared


def test_every_layer_code_is_declared() -> None:
    problems = _undeclared(sites_under(*LAYER_FOLDERS))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", [
    path.relative_to(REPO / FORMAT_FOLDER).as_posix() for path in _module_files(FORMAT_FOLDER)
    if path != REPO / FORMAT_FOLDER / "__init__.py"])
def test_every_format_code_is_declared(module: str) -> None:
    """Per module of ``formats/``, helpers included (``jsonref`` for environment's
    ``$base``, ``haizea_scan``): the codes it emits that no declaration names."""
    path = REPO / FORMAT_FOLDER / module
    problems = _undeclared(sites_in(path))
    assert not problems, "undeclared:\n" + "\n".join(problems)


def test_every_declared_code_can_be_emitted() -> None:
    sites = [site for site in sites_under(*LAYER_FOLDERS, FORMAT_FOLDER)
             if site.kind in ("literal", "candidates", "pattern")]
    unreachable = sorted(f"{code} ({item.declared_in})" for code, item in declarations().items()
                         if not any(site.matches(code) for site in sites))
    assert not unreachable, "\n".join(unreachable)


def test_every_dynamic_code_resolves() -> None:
    unresolved = [str(site) for site in sites_under(*LAYER_FOLDERS, FORMAT_FOLDER)
                  if site.kind == "unresolved"]
    assert unresolved == [], "write the codes these sites pass out as literals"


def test_no_code_is_empty() -> None:
    empty = [str(site) for site in sites_under(*LAYER_FOLDERS, FORMAT_FOLDER)
             if site.kind == "literal" and site.codes == ("",)]
    assert empty == []
    make: Any = error  # the call below is wrong on purpose
    with pytest.raises(TypeError):
        make("a diagnostic without a code")


def test_each_code_is_declared_once() -> None:
    places: dict[str, list[str]] = {}
    for name in LAYER_MODULES:
        for code in getattr(importlib.import_module(name), "CODES", ()):
            places.setdefault(code.code, []).append(name)
    for spec in FORMATS:
        for code in spec.codes:
            places.setdefault(code.code, []).append(f"format {spec.name}")
    twice = [f"{code}: {', '.join(where)}" for code, where in places.items() if len(where) > 1]
    assert not twice, "declared more than once:\n" + "\n".join(twice)


def test_every_layer_codes_tuple_reaches_the_catalogue() -> None:
    """A layer module's ``CODES`` is listed in ``LAYER_MODULES``, or a format's declaration
    takes it in (``dcx.parsing.fluxion``'s graph codes are JGF's); otherwise it would
    declare nothing."""
    declared = declarations()
    for folder in LAYER_FOLDERS:
        for path in _module_files(folder):
            name = f"dcx.{folder}.{path.stem}"
            if name in LAYER_MODULES or not any(
                    isinstance(node, ast.Assign | ast.AnnAssign) and any(
                        isinstance(target, ast.Name) and target.id == "CODES"
                        for target in (node.targets if isinstance(node, ast.Assign)
                                       else [node.target]))
                    for node in _parsed(path).body):
                continue
            missing = [code.code for code in importlib.import_module(name).CODES
                       if code.code not in declared]
            assert not missing, f"{name}.CODES is neither listed nor in a format: {missing}"
    for name in LAYER_MODULES:
        importlib.import_module(name)


def test_declarations_are_well_formed() -> None:
    for code, item in declarations().items():
        entry = item.code
        assert CODE_SHAPE.match(code), code
        assert entry.severity in ("error", "warning"), code
        assert entry.meaning.strip() and "\n" not in entry.meaning, code
        assert not (entry.conformance and entry.severity == "error"), (
            f"{code}: conformance marks warnings; an error already refuses the file")


# ------------------------------------------------------------------------------ schemas

# Keywords that only lead to subschemas: a failure below them carries the subschema's keyword.
_DESCENDING = frozenset({"$ref", "$defs", "properties", "patternProperties", "items",
                         "prefixItems", "allOf", "if", "then", "else", "propertyNames",
                         "dependentSchemas", "$schema", "$id", "$comment", "title",
                         "description", "examples", "default", "$anchor", "definitions"})


def _keywords(schema: Any, inside_names: bool = False) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if not inside_names:
                yield key
            names = key in ("properties", "patternProperties", "$defs", "definitions",
                            "dependentSchemas") and not inside_names
            yield from _keywords(value, names)
    elif isinstance(schema, list):
        for item in schema:
            yield from _keywords(item)


def test_every_schema_keyword_that_can_fail_has_a_code() -> None:
    import jsonschema

    keywords = set(jsonschema.Draft202012Validator.VALIDATORS)
    used: set[str] = set()
    for entry in resources.files("dcx.schemas").iterdir():
        if entry.name.endswith(".json"):
            used.update(_keywords(json.loads(entry.read_text(encoding="utf-8"))))
    failing = (used & keywords) - _DESCENDING
    assert failing - SCHEMA_KEYWORD_CODES.keys() == set()


# ------------------------------------------------------------------------------ runtime


def test_the_suite_fails_a_test_that_emits_an_undeclared_code(
        code_recorder: CodeRecorder) -> None:
    made_by_dcx = {"__name__": "dcx.formats.imaginary", "error": error}
    exec("error('made up', 'imaginary.code')", made_by_dcx)  # a fake dcx module
    Diagnostic(error("x", "json.syntax").severity, "made by a test", "tests.own-code")
    assert code_recorder.undeclared() == [("imaginary.code", "dcx.formats.imaginary")]


def test_only_formats_declare_conformance_codes() -> None:
    """The conversion's acceptance rule reads conformance codes from the formats alone
    (``dcx.converters.registry.conformance_codes``): a layer module declaring one would be
    a rule it never applies."""
    from dcx.converters.registry import conformance_codes

    elsewhere = sorted(code for code, item in declarations().items()
                       if item.code.conformance and item.format is None)
    assert elsewhere == []
    assert conformance_codes() == {code for code, item in declarations().items()
                                   if item.code.conformance}
