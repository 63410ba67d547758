"""The documentation site's generators and its strict build (no browser needed).

The generators live in ``site/hooks/dcxdocs`` (loaded by MkDocs as hooks); these tests import
them directly and check that the pages say what the code and the schemas say.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from lxml import etree, html

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "site" / "hooks"))

from dcxdocs import (  # noqa: E402
    cli_ref,
    codes,
    conversions,
    formats_pages,
    jsonschema_ref,
    reference_pages,
    xsd_ref,
)

from dcx.converters.registry import FORMATS, get  # noqa: E402

XS = "{http://www.w3.org/2001/XMLSchema}"
JSON_SCHEMAS = sorted(entry.name for entry in resources.files("dcx.schemas").iterdir()
                      if entry.name.endswith(".schema.json"))
XSDS = sorted(entry.name for entry in resources.files("dcx.xsd").iterdir()
              if entry.name.endswith(".xsd"))


def _strict_build(config: Path, destination: Path,
                  extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (install the docs extra)")
    pytest.importorskip("material", reason="mkdocs-material is not installed (docs extra)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", **(extra_env or {})}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
         "-d", str(destination)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    destination = tmp_path_factory.mktemp("site")
    result = _strict_build(REPO / "site" / "mkdocs.yml", destination)
    assert result.returncode == 0, f"strict build failed:\n{result.stdout}\n{result.stderr}"
    return destination


# ------------------------------------------------------------------ schema reference pages


def _json_property_names(node: object) -> set[str]:
    """Every key any ``properties`` object of the schema declares (a key may itself be
    called ``properties``: the values of a properties map are schemas, not keywords)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for keyword, value in node.items():
            if keyword in ("properties", "$defs", "definitions") and isinstance(value, dict):
                if keyword == "properties":
                    found |= set(value)
                for child in value.values():
                    found |= _json_property_names(child)
            elif isinstance(value, dict | list):
                found |= _json_property_names(value)
    elif isinstance(node, list):
        for value in node:
            found |= _json_property_names(value)
    return found


@pytest.mark.parametrize("name", JSON_SCHEMAS)
def test_json_schema_reference_lists_every_key(name: str) -> None:
    schema = json.loads(resources.files("dcx.schemas").joinpath(name).read_text("utf-8"))
    reference = jsonschema_ref.reference(schema)
    assert _json_property_names(schema) <= reference.keys()
    rendered = jsonschema_ref.render(reference)
    for key in _json_property_names(schema):
        assert f"`{key}`" in rendered


def test_json_schema_reference_types_required_units_constraints() -> None:
    schema = {
        "type": "object", "required": ["size"], "additionalProperties": False,
        "properties": {
            "size": {"type": "integer", "minimum": 1, "description": "Capacity in MB."},
            "kind": {"enum": ["a", "b"]},
            "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
        },
        "$defs": {"item": {"type": "object", "properties": {
            "at": {"type": "number", "description": "Submit time, seconds"}}}},
    }
    reference = jsonschema_ref.reference(schema)
    root, item = reference.sections
    size, kind, items = root.rows
    assert (size.type, size.required, size.unit, size.constraints) == ("integer", True, "MB", "≥ 1")
    assert (kind.type, kind.required) == ('one of "a", "b"', False)
    assert items.type == "array of object (item)"
    assert root.closed and not item.closed
    assert item.pointer == "/items/*" and item.rows[0].unit == "s"


def _xsd_declared_names(name: str, seen: set[str] | None = None) -> set[str]:
    """Element names and ``@attribute`` names declared in an XSD and what it includes."""
    seen = seen if seen is not None else set()
    if name in seen:
        return set()
    seen.add(name)
    root = etree.fromstring(resources.files("dcx.xsd").joinpath(name).read_bytes())
    names = {element for node in root.iter(f"{XS}element")
             if (element := node.get("name"))}
    names |= {f"@{attribute}" for node in root.iter(f"{XS}attribute")
              if (attribute := node.get("name"))}
    for include in root.iter(f"{XS}include"):
        location = include.get("schemaLocation")
        assert location is not None, f"{name}: an xs:include without a schemaLocation"
        names |= _xsd_declared_names(location, seen)
    return names


@pytest.mark.parametrize("name", [n for n in XSDS if xsd_ref.reference(n).roots])
def test_xsd_reference_lists_every_element_and_attribute_reachable(name: str) -> None:
    reference = xsd_ref.reference(name)
    documented = reference.names()
    # every root's content, every attribute of a reachable type: compare with a direct walk of
    # the same files, restricted to names reachable from this root
    assert set(reference.roots) <= documented
    for section in reference.sections:
        assert section.path.endswith("/" + section.name)
    rendered = xsd_ref.render(reference)
    for item in documented:
        assert f"`{item}`" in rendered or f"### {item} " in rendered


def test_every_xsd_name_appears_on_some_format_page() -> None:
    documented: set[str] = set()
    for name in XSDS:
        if xsd_ref.reference(name).roots:
            documented |= xsd_ref.reference(name).names()
    declared: set[str] = set()
    for name in XSDS:
        declared |= _xsd_declared_names(name)
    assert declared <= documented


SAMPLE_XSD = {
    "root.xsd": b"""<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:include schemaLocation="types.xsd"/>
  <xs:element name="cluster" type="ClusterType"/>
</xs:schema>""",
    "types.xsd": b"""<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:complexType name="ClusterType">
    <xs:sequence>
      <!-- the machines, clock rate in MHz -->
      <xs:element name="machine" type="MachineType" maxOccurs="unbounded"/>
      <xs:choice minOccurs="0">
        <xs:element name="now" type="xs:string"/>
        <xs:element name="later" type="xs:string"/>
      </xs:choice>
    </xs:sequence>
    <xs:attribute name="name" type="xs:string" use="required"/>
  </xs:complexType>
  <xs:complexType name="MachineType">
    <xs:attribute name="cores" type="xs:positiveInteger" use="required"/>
    <xs:attribute name="state" type="StateType" default="up"/>
  </xs:complexType>
  <xs:simpleType name="StateType">
    <xs:restriction base="xs:string">
      <xs:enumeration value="up"/>
      <xs:enumeration value="down"/>
    </xs:restriction>
  </xs:simpleType>
</xs:schema>""",
}


def test_xsd_reference_reads_occurrence_choices_facets_and_comments() -> None:
    reference = xsd_ref.reference("root.xsd", SAMPLE_XSD.__getitem__)
    assert reference.roots == ["cluster"]
    cluster, machine = reference.sections
    assert (cluster.path, machine.path) == ("/cluster", "/cluster/machine")
    rows = {row.name: row for row in cluster.rows}
    assert (rows["machine"].required, rows["machine"].occurs) == ("yes", "1..∞")
    assert rows["machine"].unit == "MHz"  # from the comment above the declaration
    assert (rows["now"].required, rows["now"].occurs) == ("choice", "0..1")
    assert rows["@name"].required == "yes"
    attributes = {row.name: row for row in machine.rows}
    assert (attributes["@cores"].required, attributes["@cores"].constraints) == ("yes", "> 0")
    assert attributes["@state"].type == "StateType (xs:string)"
    assert attributes["@state"].constraints == "one of up, down; default up"


# ------------------------------------------------------------------ other generators


def test_cli_reference_covers_every_command_and_option() -> None:
    from dcx.cli.main import build_parser

    parser = build_parser()
    rendered = cli_ref.render(parser)
    for name in cli_ref.command_names(parser):
        assert f"## `dcx {name}`" in rendered
    commands = [action for action in parser._actions
                if isinstance(action, argparse._SubParsersAction)]
    assert len(commands) == 1
    for command in commands[0].choices.values():
        for option in command._actions:
            for option_string in option.option_strings:
                if option_string not in ("-h", "--help"):
                    assert option_string in rendered


def test_error_code_page_has_one_row_per_declared_code() -> None:
    from dcx.cli.catalogue import declarations

    rows = codes.catalogue_rows()
    assert [row.code for row in rows] == sorted(declarations())
    page = codes.error_codes_page(rows)
    for row in rows:
        [line] = [line for line in page.splitlines() if line.startswith(f"| `{row.code}` |")]
        assert f"| {row.severity} |" in line
        assert (f"format [{row.format}]" if row.format else f"`{row.module}`") in line
    for known in ("json.duplicate-key", "xml.dtd", "convert.invalid-output",
                  "format.unrecognised", "schedule.dependency-cycle"):
        assert f"`{known}`" in page
    assert "| 2 |" in page  # the exit codes


def test_error_code_page_shows_where_a_code_is_declared_and_its_conformance() -> None:
    rows = [codes.CodeRow("demo.odd", "warning", "An odd | thing.", True, "dcx.formats.demo",
                          "demo"),
            codes.CodeRow("json.bom", "error", "A BOM.", False, "dcx.parsing.jsonio", None)]
    page = codes.error_codes_page(rows)
    assert ("| `demo.odd` | warning | An odd \\| thing. | format [demo](../formats/demo.md) "
            "| yes |") in page
    assert "| `json.bom` | error | A BOM. | `dcx.parsing.jsonio` |  |" in page
    assert "2 codes in 2 groups." in page and "### demo" in page and "### json" in page


def test_divergences_section_is_extracted_and_stops_at_the_next_heading() -> None:
    docstring = ("Title.\n\nDivergences\n-----------\n\n* One ``thing``\n  continued.\n"
                 "* Two.\n\nNext\n----\n\nnot this\n")
    text = formats_pages.divergences(docstring)
    assert text == "* One `thing`\n    continued.\n* Two.\n"
    assert "$merge" in formats_pages.divergences(get("environment").doc)


def test_what_dcx_reads_lists_the_upstream_shapes_on_the_format_page() -> None:
    docstring = ("Title.\n\nWhat dcx reads\n--------------\n\n* **1.4** (the 1.4 schema): flat.\n"
                 "\nMapping\n-------\n\nnot this\n")
    assert formats_pages.what_dcx_reads(docstring) == "* **1.4** (the 1.4 schema): flat.\n"
    for name, shape in (("wfformat", "**1.4** (WfFormat 1.4 schema"),
                        ("opendc-topology", "**Composed files**")):
        page = formats_pages.spec_page(get(name))
        assert shape in page.split("## What dcx reads", 1)[1].split("\n## ", 1)[0]


def test_every_format_page_comes_from_its_declaration() -> None:
    for spec in FORMATS:
        page = formats_pages.spec_page(spec)
        assert page.startswith(f"# {spec.title}\n") and f"`{spec.name}`" in page
        for code in spec.codes:
            assert f"`{code.code}`" in page
    overview = formats_pages.overview_page()
    assert all(f"({spec.name}.md)" in overview for spec in FORMATS)


def test_scheduler_page_says_how_to_produce_results_when_absent(tmp_path: Path) -> None:
    page = reference_pages.scheduler_page(tmp_path, "")
    assert "nox -s schedule" in page and "Table XI" in page


def test_scheduler_page_includes_tables_and_plots_when_present(tmp_path: Path) -> None:
    results = tmp_path / "build" / "schedule" / "askalon"
    results.mkdir(parents=True)
    (results / "table.md").write_text("# Askalon\n\n| policy | JMS |\n|---|---|\n| FIFO | 1 |\n")
    (results / "jms.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    page = reference_pages.scheduler_page(tmp_path, "")
    assert "#### Askalon" in page and "| FIFO | 1 |" in page
    assert "](plots/askalon--jms.svg)" in page
    assert reference_pages.plot_name(tmp_path, results / "jms.svg") == "plots/askalon--jms.svg"


def test_scheduler_plots_are_collapsed_per_workload_with_captions(tmp_path: Path) -> None:
    workload = tmp_path / "build" / "schedule" / "workloads" / "trace.swf"
    (workload / "FIFO-event").mkdir(parents=True)
    for svg in (workload / "trt.svg", workload / "FIFO-event" / "gantt.svg"):
        svg.write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    page = reference_pages.scheduler_page(tmp_path, "")
    assert page.count('??? example "Plots: workloads/trace.swf (2)"') == 1
    assert "Task response time (TRT, seconds)" in page and "(Gantt chart): `workloads/" in page
    assert "    ![" in page  # inside the collapsed block


def test_scheduler_page_shows_an_experiment_s_summary_plots_and_what_was_left_out(
        tmp_path: Path) -> None:
    """What ``nox -s schedule`` writes for the converted workloads (``dcx experiment``'s
    folder, with ``not-scheduled.md`` beside it): each table, the workloads left out, and
    one collapsed block of plots per setting with their captions."""
    out = tmp_path / "build" / "schedule" / "workloads"
    setting = out / "plots" / "trace.swf--setup.json--event"
    setting.mkdir(parents=True)
    (out / "summary.md").write_text("# Experiment workloads\n\n## trace.swf on setup.json "
                                    "(event time model)\n\n| scheduler | runs |\n|---|---|\n"
                                    "| FIFO-BESTFIT | 1 |\n")
    (out / "not-scheduled.md").write_text("# Workloads left out\n\n## Workloads without jobs"
                                          "\n\n- `empty.swf`\n")
    (setting / "FIFO-BESTFIT").mkdir()
    for name in ("metrics.svg", "jwt.svg", "trt.svg", "FIFO-BESTFIT/gantt.svg"):
        (setting / name).write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    page = reference_pages.scheduler_page(tmp_path, "")
    assert "| FIFO-BESTFIT | 1 |" in page and "- `empty.swf`" in page
    # a run's Gantt chart (the schedules option) joins its setting's block
    assert page.count('??? example "Plots: workloads/plots/trace.swf--setup.json--event (4)"') \
        == 1
    assert "Mean of each headline metric per scheduler" in page
    assert "Job waiting time (JWT, seconds)" in page
    assert "Task response time (TRT, seconds)" in page
    assert ("(Gantt chart): `workloads/plots/trace.swf--setup.json--event/FIFO-BESTFIT`"
            in page)


def test_security_page_lists_every_hostile_case() -> None:
    cases = reference_pages.hostile_cases(REPO)
    if cases is None:
        pytest.skip("tests/hostile/cases.py is not importable in this checkout")
    page = reference_pages.security_page(REPO, "")
    for case in cases:
        assert f"`{case.name}`" in page and f"`{case.code}`" in page
    assert "max_input_bytes" in page


def test_a_run_marker_shows_both_streams_in_order_and_a_file_the_command_wrote() -> None:
    import dcx_docs

    transcript = dcx_docs.run_cli(
        REPO, "experiment examples/experiments/small.yaml --out {out}/small --workers 0 "
        "--no-plots && cat {out}/small/summary.md")
    said = transcript.splitlines()
    # stderr's count line comes before stdout's end, as on a terminal
    counted = next(i for i, line in enumerate(said) if "20 to run in this process" in line)
    ended = next(i for i, line in enumerate(said)
                 if line.startswith("experiment small: ran 20 cell(s) in "))
    assert counted < ended < said.index("$ echo $?") < said.index("$ cat out/small/summary.md")
    assert "  summary:  out/small/summary.md (summary.json beside it)" in said
    assert said[said.index("$ cat out/small/summary.md") + 1] == "# Experiment small"


# ------------------------------------------------------------------ the built site


def test_strict_build_writes_every_generated_page(built_site: Path) -> None:
    for page in ("index.html", "formats/index.html", "conversions/index.html",
                 "reference/loss-matrix/index.html", "reference/cli/index.html",
                 "reference/error-codes/index.html", "reference/security/index.html",
                 "guides/pre-commit/index.html", "scheduler/index.html"):
        assert (built_site / page).is_file(), page
    for spec in FORMATS:
        assert (built_site / "formats" / spec.name / "index.html").is_file()


def test_built_pages_load_nothing_from_other_hosts(built_site: Path) -> None:
    for page in built_site.rglob("*.html"):
        tree = html.parse(str(page))
        for element in tree.getroot().iter("script", "link", "img", "iframe"):
            if element.get("rel") == "canonical":
                continue  # the published address (site_url): named, never loaded
            url = element.get("src") or (element.get("href") if element.tag == "link" else None)
            if url:
                assert not url.startswith(("http:", "https:", "//")), f"{page}: {url}"


def site_url_path() -> str:
    """The path of the site's default ``site_url`` (``/dcx/``), where a project site lives."""
    import re
    from urllib.parse import urlsplit

    config = (REPO / "site" / "mkdocs.yml").read_text()
    found = re.search(r'^site_url: !ENV \[DCX_SITE_URL, "([^"]+)"\]$', config, re.M)
    assert found is not None, "site/mkdocs.yml sets no site_url (404.html would load /assets)"
    return urlsplit(found.group(1)).path


def test_404_loads_its_assets_from_the_sites_own_path(built_site: Path) -> None:
    """A project site is served from a sub-path (/dcx/); 404.html, served for any missing
    page, must not load /assets/… from the host's root."""
    path = site_url_path()
    assert path.startswith("/") and path.endswith("/") and path != "/"
    page = html.parse(str(built_site / "404.html")).getroot()
    local = [link for link in page.xpath("//link/@href | //script/@src")
             if not link.startswith(("http:", "https:", "data:"))]
    assets = [link for link in local if "assets/" in link]
    assert assets and all(link.startswith(path + "assets/") for link in assets), local


def test_no_table_has_an_empty_header_row(built_site: Path) -> None:
    empty = sorted({str(page.relative_to(built_site)) for page in built_site.rglob("*.html")
                    for head in html.parse(str(page)).getroot().iter("thead")
                    if not head.text_content().strip()})
    assert empty == []


def test_a_format_description_naming_elements_shows_them(built_site: Path) -> None:
    text = html.parse(str(built_site / "formats" / "sss" / "index.html")).getroot()
    assert "One <Node> or many inside an SSSRMAP <Data> element" in text.text_content()


def test_conversion_pages_equal_a_fresh_converter_run(built_site: Path) -> None:
    from dcx.converters.convert import convert

    compared = 0
    for page_file in sorted((built_site / "conversions").rglob("index.html")):
        for block in html.parse(str(page_file)).getroot().find_class("dcx-conversion"):
            input_path, target = block.get("data-input"), block.get("data-target")
            fresh = convert(conversions.example_bytes(REPO / input_path), target, input_path)
            output_tab = block.xpath(".//div[contains(@class,'tabbed-block')][2]")[0]
            if not fresh.data:
                assert conversions.REFUSED in output_tab.text_content(), (
                    f"{input_path} → {target}: the page shows output the converter refuses")
                continue
            assert conversions.REFUSED not in output_tab.text_content()
            output_code = output_tab.xpath(".//pre//code")
            shown = output_code[0].text_content()
            spec = get(target)
            if "binary" in spec.content:  # a Parquet output is described, not shown
                assert shown.strip() == conversions.binary_note(fresh.data, spec)
                compared += 1
                continue
            expected = fresh.data.decode("utf-8")
            if len(expected.splitlines()) <= conversions.MAX_SHOWN_LINES:
                assert shown.rstrip("\n") == expected.rstrip("\n"), f"{input_path} → {target}"
            else:
                assert expected.startswith(shown.rstrip("\n"))
            compared += 1
    if compared == 0:
        pytest.skip("no example converts in this build yet")


def test_tour_shows_real_command_output(built_site: Path) -> None:
    text = html.parse(str(built_site / "index.html")).getroot().text_content()
    if not (REPO / "examples" / "sss" / "cluster.xml").exists():
        pytest.skip("the tour's example examples/sss/cluster.xml is not in this checkout")
    assert "$ dcx validate examples/sss/cluster.xml" in text
    assert "examples/sss/cluster.xml: valid sss (4 machines); checked against" in text
    assert "examples/sss/cluster.xml: sss (SSS Node Object XML 3.1.0), valid" in text


def test_a_broken_anchor_fails_the_strict_build(tmp_path: Path) -> None:
    copy = tmp_path / "site"
    shutil.copytree(REPO / "site", copy, ignore=shutil.ignore_patterns("__pycache__"))
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (install the docs extra)")
    from mkdocs.utils import yaml_load  # MkDocs' own reading: site_url is an !ENV tag

    config = yaml_load((REPO / "site" / "mkdocs.yml").read_text(encoding="utf-8"))
    for watched in config["watch"]:  # the copied config watches these siblings
        if watched.startswith("../"):
            (tmp_path / watched[3:]).mkdir()
    guide = copy / "docs" / "guides" / "pre-commit.md"
    guide.write_text(guide.read_text() + "\n[planted](../reference/cli.md#no-such-anchor)\n")
    result = _strict_build(copy / "mkdocs.yml", tmp_path / "out",
                           {"DCX_DOCS_REPO_ROOT": str(REPO)})
    assert result.returncode == 1
    assert "no-such-anchor" in result.stderr + result.stdout


# ------------------------------------------------------------------------------ API, drafts, width


def _python_blocks(markdown: str) -> list[str]:
    blocks: list[str] = []
    current: list[str] = []
    inside = False
    for line in markdown.splitlines():
        if line.strip() == "```python":
            inside, current = True, []
        elif line.strip() == "```" and inside:
            inside = False
            blocks.append("\n".join(current))
        elif inside:
            current.append(line)
    return blocks


def test_the_python_api_page_runs_as_written(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Each example on the API page runs against the repository's examples: the functions
    it documents keep their names, parameters and results."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks((REPO / "site" / "docs" / "api.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    for block in blocks:
        exec(compile(block, "api.md", "exec"), {})  # our own documentation, run as written
    assert (tmp_path / "build" / "cluster.xml").read_bytes().startswith(b"<?xml")


def test_format_pages_name_the_json_schema_dialect_correctly() -> None:
    page = formats_pages.spec_page(get("environment"))
    assert "(JSON Schema 2020-12)" in page and "draft 20)" not in page


def test_the_loss_matrix_abbreviates_its_columns() -> None:
    page = formats_pages.loss_matrix_page()
    header = next(line for line in page.splitlines() if line.startswith("| from"))
    assert '<abbr title="osp-workload">osp-w</abbr>' in header
    assert "impossible" not in header and "| ✗ |" in page


def test_a_workflow_publishes_the_site_from_main() -> None:
    from ruamel.yaml import YAML

    workflow = YAML(typ="safe").load((REPO / ".github" / "workflows" / "docs.yml").read_text())
    assert workflow[True if True in workflow else "on"]["push"]["branches"] == ["main"]
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    assert any("nox -s docs" in step.get("run", "") for step in steps)
    uploads = [step for step in steps if "upload-pages-artifact" in step.get("uses", "")]
    assert uploads and uploads[0]["with"]["path"] == "build/site"
    assert any("deploy-pages" in step.get("uses", "") for step in steps)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "https://<owner>.github.io/<repository>/" in readme
    assert "DCX_CORPUS" in readme and "../shared/corpus" in readme
    assert "build/converted/report.md" in readme
