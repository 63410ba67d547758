"""Reference tables from our XSDs: every element and attribute, its type, whether required,
how often it may occur, constraints, and the schema's own comments, by element path."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources

from lxml import etree

from dcxdocs.markdown import cell, code, table
from dcxdocs.units import unit_in_text

XS = "{http://www.w3.org/2001/XMLSchema}"
UNBOUNDED = -1

# Built-in types whose names imply a bound worth stating.
_BUILTIN_BOUNDS = {
    "xs:positiveInteger": "> 0", "xs:nonNegativeInteger": "≥ 0",
    "xs:negativeInteger": "< 0", "xs:nonPositiveInteger": "≤ 0",
}
_FACETS = {
    "minInclusive": "≥ {}", "maxInclusive": "≤ {}", "minExclusive": "> {}",
    "maxExclusive": "< {}", "minLength": "length ≥ {}", "maxLength": "length ≤ {}",
    "length": "length = {}", "pattern": "matches `{}`", "totalDigits": "≤ {} digits",
    "fractionDigits": "≤ {} decimals",
}


@dataclass(frozen=True)
class ItemRow:
    """A child element, an attribute (name starts with ``@``) or the text content."""

    name: str
    type: str
    required: str
    occurs: str
    unit: str
    constraints: str
    description: str


@dataclass
class ElementSection:
    path: str
    name: str
    type_name: str
    content: str
    rows: list[ItemRow] = field(default_factory=list)


@dataclass
class XsdReference:
    file_name: str
    roots: list[str]
    sections: list[ElementSection]
    header: str

    def names(self) -> set[str]:
        return {s.name for s in self.sections} | {r.name for s in self.sections for r in s.rows}


def _trusted_xsd_parser() -> etree.XMLParser:
    # Our own XSDs from the wheel: the same no-entity/no-network settings as
    # dcx.parsing.xmlio.make_parser, but comments kept because they document the schema.
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                           remove_comments=False)


Reader = Callable[[str], bytes]


def read_packaged_xsd(name: str) -> bytes:
    """An XSD shipped in the wheel (``dcx.xsd``)."""
    return resources.files("dcx.xsd").joinpath(name).read_bytes()


def _load(name: str, loaded: dict[str, etree._Element], read: Reader) -> None:
    if name in loaded:
        return
    root = etree.fromstring(read(name), parser=_trusted_xsd_parser())
    loaded[name] = root
    for include in root.iter(f"{XS}include", f"{XS}import"):
        location = include.get("schemaLocation")
        if location and "/" not in location:
            _load(location, loaded, read)


def _occurs(value: str | None) -> int:
    if value is None:
        return 1
    return UNBOUNDED if value == "unbounded" else int(value)


def _occurs_text(minimum: int, maximum: int) -> str:
    upper = "∞" if maximum == UNBOUNDED else str(maximum)
    return str(minimum) if str(minimum) == upper else f"{minimum}..{upper}"


def _process_contents(wildcard: etree._Element) -> str:
    return f"processContents={wildcard.get('processContents', 'strict')}"


def _comment_before(node: etree._Element) -> str:
    """The nearest XML comment among the preceding siblings (it labels the group below it)."""
    for sibling in node.itersiblings(preceding=True):
        if isinstance(sibling, etree._Comment):
            return " ".join(str(sibling.text).split())
    return ""


def _grandparent(node: etree._Element) -> etree._Element | None:
    parent = node.getparent()
    return None if parent is None else parent.getparent()


def _documentation(node: etree._Element) -> str:
    texts = [" ".join((doc.text or "").split()) for doc in node.iter(f"{XS}documentation")
             if _grandparent(doc) is node]
    return " ".join(text for text in texts if text)


class _Index:
    def __init__(self, schema_name: str, read: Reader) -> None:
        self.files: dict[str, etree._Element] = {}
        _load(schema_name, self.files, read)
        self.main = self.files[schema_name]
        self.complex: dict[str, etree._Element] = {}
        self.simple: dict[str, etree._Element] = {}
        self.elements: dict[str, etree._Element] = {}
        self.groups: dict[str, etree._Element] = {}
        self.attribute_groups: dict[str, etree._Element] = {}
        for root in self.files.values():
            for child in root:
                name = child.get("name") if isinstance(child.tag, str) else None
                if name is None:
                    continue
                table_for = {f"{XS}complexType": self.complex, f"{XS}simpleType": self.simple,
                             f"{XS}element": self.elements, f"{XS}group": self.groups,
                             f"{XS}attributeGroup": self.attribute_groups}.get(child.tag)
                if table_for is not None:
                    table_for[name] = child

    @staticmethod
    def local(name: str) -> str:
        return name.split(":", 1)[1] if ":" in name and not name.startswith("xs:") else name

    def simple_constraints(self, type_name: str | None, node: etree._Element | None) -> str:
        """Facets of a named or inline simple type, following restriction bases."""
        parts: list[str] = []
        seen: set[str] = set()
        while True:
            if node is None and type_name:
                if type_name in _BUILTIN_BOUNDS:
                    parts.append(_BUILTIN_BOUNDS[type_name])
                node = self.simple.get(self.local(type_name))
                if node is None or type_name in seen:
                    break
                seen.add(type_name)
            if node is None:
                break
            restriction = node.find(f"{XS}restriction")
            union = node.find(f"{XS}union")
            if union is not None:
                parts.append("union of " + ", ".join(union.get("memberTypes", "").split()))
                break
            if node.find(f"{XS}list") is not None:
                parts.append("space-separated list")
                break
            if restriction is None:
                break
            enumeration = [e.get("value", "") for e in restriction.findall(f"{XS}enumeration")]
            if enumeration:
                parts.append("one of " + ", ".join(enumeration))
            for facet in restriction:
                facet_name = etree.QName(facet).localname if isinstance(facet.tag, str) else ""
                if facet_name in _FACETS:
                    parts.append(_FACETS[facet_name].format(facet.get("value")))
            type_name, node = restriction.get("base"), restriction.find(f"{XS}simpleType")
        return "; ".join(parts)

    def simple_base(self, type_name: str) -> str:
        """A named simple type's built-in base, for readers who do not know our type names."""
        node = self.simple.get(self.local(type_name))
        restriction = node.find(f"{XS}restriction") if node is not None else None
        if restriction is not None and restriction.get("base"):
            return self.simple_base(str(restriction.get("base")))
        return type_name

    def type_text(self, type_name: str) -> str:
        base = self.simple_base(type_name)
        return f"{type_name} ({base})" if base != type_name else type_name


class _Walker:
    def __init__(self, index: _Index) -> None:
        self.index = index
        self.sections: list[ElementSection] = []
        self.documented: dict[str, str] = {}
        """Named complex type → the first path documenting it (later uses refer back)."""

    def element(self, declaration: etree._Element, path: str, stack: tuple[str, ...]) -> None:
        if declaration.get("ref"):
            target = self.index.elements.get(self.index.local(str(declaration.get("ref"))))
            if target is None:
                return
            declaration = target
        name = str(declaration.get("name"))
        element_path = f"{path}/{name}"
        type_name = declaration.get("type", "")
        complex_type = declaration.find(f"{XS}complexType")
        if complex_type is None and type_name:
            complex_type = self.index.complex.get(self.index.local(type_name))
        if complex_type is None:
            return  # simple content: documented as a row of its parent
        key = type_name or element_path
        if key in stack:
            return
        if type_name and type_name in self.documented:
            self.sections.append(ElementSection(
                element_path, name, type_name,
                f"same content as `{self.documented[type_name]}`"))
            return
        if type_name:
            self.documented[type_name] = element_path
        section = ElementSection(element_path, name, type_name or "(anonymous)",
                                 self._content_text(complex_type))
        self.sections.append(section)
        children: list[etree._Element] = []
        self._particles(complex_type, section, children, 1, 1, in_choice=False)
        self._attributes(complex_type, section)
        for child in children:
            self.element(child, element_path, (*stack, key))

    def _content_text(self, complex_type: etree._Element) -> str:
        simple = complex_type.find(f"{XS}simpleContent")
        if simple is not None:
            extension = simple[0] if len(simple) else None
            base = extension.get("base", "") if extension is not None else ""
            return f"text of type {base} with attributes"
        model = next((child for child in complex_type
                      if isinstance(child.tag, str) and child.tag in
                      (f"{XS}all", f"{XS}sequence", f"{XS}choice")), None)
        mixed = complex_type.get("mixed") == "true"
        if model is None:
            return "empty (attributes only)" if not mixed else "text"
        kind = etree.QName(model).localname
        text = {"all": "children in any order, each at most once",
                "sequence": "children in this order",
                "choice": "one of the children"}[kind]
        if kind == "choice" and _occurs(model.get("maxOccurs")) == UNBOUNDED:
            text = "any number of the children, in any order"
        return text + (" (mixed with text)" if mixed else "")

    def _particles(self, node: etree._Element, section: ElementSection,
                   children: list[etree._Element], minimum: int, maximum: int,
                   in_choice: bool) -> None:
        for child in node:
            if not isinstance(child.tag, str):
                continue
            tag = etree.QName(child).localname
            low, high = _occurs(child.get("minOccurs")), _occurs(child.get("maxOccurs"))
            eff_min = minimum * low
            eff_max = UNBOUNDED if UNBOUNDED in (maximum, high) else maximum * high
            if tag in ("sequence", "all", "choice"):
                choice = tag == "choice" and len([c for c in child if isinstance(c.tag, str)]) > 1
                self._particles(child, section, children, eff_min, eff_max, in_choice or choice)
            elif tag == "group" and child.get("ref"):
                group = self.index.groups.get(self.index.local(str(child.get("ref"))))
                if group is not None:
                    self._particles(group, section, children, eff_min, eff_max, in_choice)
            elif tag == "element":
                self._element_row(child, section, eff_min, eff_max, in_choice)
                children.append(child)
            elif tag == "any":
                namespace = child.get("namespace", "##any")
                section.rows.append(ItemRow("(any element)", f"namespace {namespace}", "no",
                                            _occurs_text(eff_min, eff_max), "",
                                            _process_contents(child),
                                            "skipped by the reader with a warning"
                                            if namespace == "##other" else ""))
            elif tag in ("complexContent", "simpleContent"):
                extension = next((c for c in child if isinstance(c.tag, str)), None)
                if extension is None:
                    continue
                base = self.index.complex.get(self.index.local(extension.get("base", "")))
                if base is not None:
                    self._particles(base, section, children, minimum, maximum, in_choice)
                if tag == "simpleContent":
                    base_name = extension.get("base", "")
                    section.rows.append(ItemRow("(text)", base_name, "yes", "1",
                                                unit_in_text(_comment_before(node)),
                                                self.index.simple_constraints(base_name, None),
                                                "element content"))
                self._particles(extension, section, children, minimum, maximum, in_choice)

    def _element_row(self, child: etree._Element, section: ElementSection, minimum: int,
                     maximum: int, in_choice: bool) -> None:
        target = child
        if child.get("ref"):
            target = self.index.elements.get(self.index.local(str(child.get("ref"))), child)
        type_name = target.get("type", "")
        description = _documentation(target) or _comment_before(child)
        constraints = self.index.simple_constraints(type_name, target.find(f"{XS}simpleType"))
        type_text = self.index.type_text(type_name) if type_name else "(inline)"
        required = "choice" if in_choice else ("yes" if minimum >= 1 else "no")
        section.rows.append(ItemRow(str(target.get("name")), type_text, required,
                                    _occurs_text(minimum, maximum),
                                    unit_in_text(description), constraints, description))

    def _attributes(self, node: etree._Element, section: ElementSection) -> None:
        for child in node:
            if not isinstance(child.tag, str):
                continue
            tag = etree.QName(child).localname
            if tag == "attribute":
                self._attribute_row(child, section)
            elif tag == "attributeGroup" and child.get("ref"):
                group = self.index.attribute_groups.get(self.index.local(str(child.get("ref"))))
                if group is not None:
                    self._attributes(group, section)
            elif tag in ("simpleContent", "complexContent", "extension", "restriction"):
                self._attributes(child, section)
            elif tag == "anyAttribute":
                namespace = child.get("namespace", "##any")
                section.rows.append(ItemRow("@(any attribute)", f"namespace {namespace}", "no",
                                            "0..∞", "", _process_contents(child), ""))

    def _attribute_row(self, attribute: etree._Element, section: ElementSection) -> None:
        type_name = attribute.get("type", "")
        inline = attribute.find(f"{XS}simpleType")
        constraints = self.index.simple_constraints(type_name or None, inline)
        for key in ("default", "fixed"):
            if attribute.get(key) is not None:
                stated = f"{key} {attribute.get(key)}"
                constraints = f"{constraints}; {stated}" if constraints else stated
        if type_name:
            type_text = self.index.type_text(type_name)
        elif inline is not None:
            restriction = inline.find(f"{XS}restriction")
            type_text = (restriction.get("base", "(inline)") if restriction is not None
                         else "(inline)")
        else:
            type_text = "xs:anySimpleType"
        description = _documentation(attribute) or _comment_before(attribute)
        required = "yes" if attribute.get("use") == "required" else "no"
        section.rows.append(ItemRow(f"@{attribute.get('name')}", type_text, required,
                                    "1" if required == "yes" else "0..1",
                                    unit_in_text(description), constraints, description))


def _header_comment(root: etree._Element) -> str:
    for node in root.itersiblings(preceding=True):
        if isinstance(node, etree._Comment):
            return str(node.text).strip()
    return ""


def reference(schema_name: str, read: Reader = read_packaged_xsd) -> XsdReference:
    """The reference of one XSD (and what it includes), read through ``read``."""
    index = _Index(schema_name, read)
    walker = _Walker(index)
    roots = []
    for declaration in index.main.findall(f"{XS}element"):
        roots.append(str(declaration.get("name")))
        walker.element(declaration, "", ())
    return XsdReference(schema_name, roots, walker.sections, _header_comment(index.main))


def render(ref: XsdReference, heading_level: int = 3) -> str:
    hashes = "#" * heading_level
    parts = []
    for section in ref.sections:
        parts.append(f"{hashes} {section.name} — `{section.path}`\n")
        parts.append(f"Type `{section.type_name}`: {section.content}.\n")
        if section.rows:
            rows = [(code(row.name), cell(row.type), row.required, row.occurs, cell(row.unit),
                     cell(row.constraints), cell(row.description)) for row in section.rows]
            parts.append(table(("Element / attribute", "Type", "Required", "Occurs", "Unit",
                                "Constraints", "Notes"), rows))
    return "\n".join(parts)
