"""Our XSDs judged by a second, independent XSD 1.0 implementation (xmlschema, pure Python)
beside the one dcx runs (libxml2 through lxml): every shipped XSD must be a schema both
accept, and every XML example and corpus file must get the same verdict from both. A schema
construct that libxml2 reads differently from the standard would otherwise go unnoticed."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import pytest

from dcx.parsing.xmlio import load_xsd, make_parser

if importlib.util.find_spec("xmlschema") is None:
    pytest.skip("xmlschema is in the test extra", allow_module_level=True)

REPO = Path(__file__).resolve().parent.parent
XSDS = sorted(path.name for path in (REPO / "xsd").glob("*.xsd"))


@cache
def second_opinion(name: str) -> object:
    import xmlschema  # a second's import: loaded when a test first needs it

    return xmlschema.XMLSchema10(str(REPO / "xsd" / name))


@cache
def schema_for_root() -> dict[tuple[str | None, str], str]:
    """The XSD declaring each global element, by (namespace, local name)."""
    roots: dict[tuple[str | None, str], str] = {}
    for name in XSDS:
        schema = second_opinion(name)
        for element in schema.elements.values():  # type: ignore[attr-defined]
            key = (schema.target_namespace or None, element.local_name)  # type: ignore[attr-defined]
            roots.setdefault(key, name)
    return roots


@pytest.mark.parametrize("name", XSDS)
def test_both_implementations_accept_the_schema(name: str) -> None:
    load_xsd(name)
    assert second_opinion(name).validity == "valid"  # type: ignore[attr-defined]


def xml_files(folder: Path) -> list[Path]:
    return sorted(path for pattern in ("*.xml", "*.lwf", "*.lwfa")
                  for path in folder.rglob(pattern))


def verdicts(path: Path) -> tuple[bool, bool] | None:
    """(libxml2's verdict, xmlschema's) for a file whose root one of our XSDs declares."""
    from lxml import etree

    try:
        tree = etree.ElementTree(etree.fromstring(path.read_bytes(), parser=make_parser()))
    except (etree.XMLSyntaxError, OSError):  # not well-formed, or refused by our parser
        return None
    root = etree.QName(tree.getroot())
    name = schema_for_root().get((root.namespace, root.localname))
    if name is None:
        return None
    first = load_xsd(name).validate(tree)
    return first, second_opinion(name).is_valid(tree)  # type: ignore[attr-defined]


def disagreements(files: list[Path]) -> tuple[int, list[str]]:
    compared, found = 0, []
    for path in files:
        judged = verdicts(path)
        if judged is None:
            continue
        compared += 1
        if judged[0] != judged[1]:
            found.append(f"{path}: libxml2 {judged[0]}, xmlschema {judged[1]}")
    return compared, found


def test_both_implementations_judge_every_xml_example_alike() -> None:
    compared, found = disagreements(xml_files(REPO / "examples"))
    assert compared >= 5
    assert found == []


def test_both_implementations_judge_every_xml_corpus_file_alike(corpus_dir: Path) -> None:
    compared, found = disagreements(xml_files(corpus_dir))
    assert compared >= 5
    assert found == []
