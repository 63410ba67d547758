"""The built documentation site in a real browser: Debian's chromium, headless, through
playwright, against the site served on 127.0.0.1.

The site is served from the sub-path of its ``site_url`` (``/dcx/``), as GitHub Pages serves a
project site, with its 404.html for missing paths.

Checks: every page reachable from the home page loads with no 4xx/5xx, no console error and
no request leaving 127.0.0.1; every same-site #fragment exists on its target page; search,
typed with real keystrokes, finds a format element's spec page; a missing page gets the
styled 404 page (its assets found under the sub-path); a conversion example's
output tab holds exactly what the converter produces in this test; the scheduler page, built
from scheduler outputs this test produces (example workloads, one without jobs, one that
cannot run), shows no NaN, stays under a height bound and shows its plots whole.

Skips (with the reason) when chromium or playwright is absent, or when mkdocs is not
installed. Needs the ``docs`` and ``browser`` extras.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest

from tests.test_docs_site import site_url_path

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SEARCH_TERMS = (("Processors", "sss"), ("lease-request", "haizea"))
"""A format element typed into search, and the format whose spec page must come up."""
MAX_COMPARED_LINES = 150
"""Conversion outputs longer than this are cut on the page; the test compares a complete one."""
SCHEDULED_WORKLOADS = ("examples/gwf/grid-archive.gwf", "examples/gwf/montage-workflow.gwf",
                       "examples/haizea/mixed-site.lwf")
"""Example workloads the scheduler page is built from (the last cannot run on the
environment: a task asks for a resource no machine has)."""
SCHEDULER_RESULTS_MAX_HEIGHT = 4_000
"""Pixels the results part of the scheduler page (from "Reproduced in this build" on) may
take in a 1400 x 900 window with every collapsed block closed: the two example workloads'
tables, the lists of workloads not run and one closed block per workload's plots. The page
was ~39,000 px when every plot and Gantt chart was laid out one under the other."""
SCHEDULER_PAGE_MAX_HEIGHT = 14_000
"""Pixels for the whole page: the results plus the hand-written guide above them."""


def scheduler_outputs(destination: Path) -> Path:
    """What ``nox -s schedule`` writes for the converted workloads, for a few example
    workloads plus one without jobs (an SWF header alone): the experiment the real script
    writes, run by ``dcx experiment`` into ``destination``."""
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (plots extra)")
    empty = destination / "no-jobs.swf"
    empty.write_text("; MaxNodes: 4\n; MaxProcs: 64\n")
    out = destination / "schedule" / "workloads"
    for command in (
            [sys.executable, "-m", "dcx.experiments.workloads", "--out", str(out),
             "--env", "examples/environment/small-cluster.json", *SCHEDULED_WORKLOADS,
             str(empty)],
            [str(Path(sys.executable).with_name("dcx")), "experiment", str(out / "experiment.json"),
             "--out", str(out), "--workers", "0"]):
        result = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                                timeout=600, check=False)
        assert result.returncode == 0, result.stderr
    return destination / "schedule"


def build_site(destination: Path, schedule: Path | None = None) -> Path:
    """A strict build of site/ into ``destination`` (fails the test on any warning), with
    the scheduler outputs in ``schedule`` when given."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (install the docs extra)")
    pytest.importorskip("material", reason="mkdocs-material is not installed (docs extra)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    if schedule is not None:
        env["DCX_SCHEDULE_OUTPUTS"] = str(schedule)
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", "site/mkdocs.yml",
         "-d", str(destination)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, f"strict build failed:\n{result.stdout}\n{result.stderr}"
    return destination


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not CHROMIUM.exists():
        pytest.skip(f"chromium not found at {CHROMIUM} (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api",
                        reason="playwright is not installed (install the browser extra)")
    schedule = scheduler_outputs(tmp_path_factory.mktemp("schedule"))
    # built where the server puts it: under the sub-path of site_url, as a project site is
    root = tmp_path_factory.mktemp("served")
    return build_site(root.joinpath(*SITE_PATH.strip("/").split("/")), schedule)


SITE_PATH = site_url_path()
"""The sub-path the site is served from (``/dcx/``), as GitHub Pages serves a project site."""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _pages_handler(not_found: bytes) -> type[_QuietHandler]:
    """A handler that answers a missing path with the site's 404.html, as GitHub Pages
    does for a project site."""

    class PagesHandler(_QuietHandler):
        def send_error(self, code: int, message: str | None = None,
                       explain: str | None = None) -> None:
            if code != 404:
                super().send_error(code, message, explain)
                return
            self.send_response(404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(not_found)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(not_found)

    return PagesHandler


@pytest.fixture(scope="module")
def base_url(site_dir: Path) -> Iterator[str]:
    """The site on an ephemeral 127.0.0.1 port under ``SITE_PATH``; sockets re-enabled for
    this module only."""
    from pytest_socket import disable_socket, enable_socket

    enable_socket()
    root = site_dir.parents[SITE_PATH.strip("/").count("/")]
    handler = functools.partial(_pages_handler((site_dir / "404.html").read_bytes()),
                                directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{SITE_PATH}"
    finally:
        server.shutdown()
        server.server_close()
        disable_socket(allow_unix_socket=True)


@pytest.fixture(scope="module")
def browser(base_url: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


class PageWatch:
    """Everything a page did that the site must not do."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def attach(self, context: Any, page: Any) -> None:
        def route(route_: Any) -> None:
            host = urlsplit(route_.request.url).hostname
            if route_.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
                route_.continue_()
            else:
                self.failures.append(f"request left 127.0.0.1: {route_.request.url}")
                route_.abort()

        def response(response_: Any) -> None:
            if response_.status >= 400:
                self.failures.append(f"HTTP {response_.status}: {response_.url}")

        def console(message: Any) -> None:
            if message.type == "error":
                self.failures.append(f"console error on {page.url}: {message.text}")

        context.route("**/*", route)
        page.on("response", response)
        page.on("console", console)
        page.on("pageerror", lambda error: self.failures.append(f"page error on {page.url}: "
                                                                f"{error}"))


@pytest.fixture
def watched_page(browser: Any) -> Iterator[tuple[Any, PageWatch]]:
    context = browser.new_context()
    page = context.new_page()
    watch = PageWatch()
    watch.attach(context, page)
    try:
        yield page, watch
    finally:
        context.close()


def _built_pages(site_dir: Path) -> set[str]:
    """Every page MkDocs wrote, as a URL path (``formats/sss/``)."""
    pages = set()
    for index in site_dir.rglob("index.html"):
        relative = index.parent.relative_to(site_dir).as_posix()
        pages.add("" if relative == "." else relative + "/")
    return pages


def test_every_page_loads_offline_without_errors(site_dir: Path, base_url: str,
                                                  watched_page: tuple[Any, PageWatch]) -> None:
    page, watch = watched_page
    to_visit, visited = [base_url], set()
    fragments: dict[str, set[str]] = {}
    ids_on: dict[str, set[str]] = {}
    while to_visit:
        url = to_visit.pop()
        if url in visited:
            continue
        visited.add(url)
        response = page.goto(url, wait_until="networkidle")
        assert response is not None and response.status == 200, f"{url}: {response}"
        ids_on[url] = set(page.eval_on_selector_all("[id]", "nodes => nodes.map(n => n.id)"))
        hrefs = page.eval_on_selector_all("a[href]", "nodes => nodes.map(n => n.href)")
        for href in hrefs:
            target, fragment = urldefrag(urljoin(url, href))
            if not target.startswith(base_url) or not target.endswith("/"):
                continue  # other sites are links only; files such as .svg are fetched by pages
            if fragment:
                fragments.setdefault(target, set()).add(fragment)
            if target not in visited:
                to_visit.append(target)
    assert watch.failures == []
    reached = {url[len(base_url):] for url in visited}
    unreachable = _built_pages(site_dir) - reached
    assert unreachable == set(), f"pages no link leads to: {sorted(unreachable)}"
    dead = sorted(f"{target}#{fragment}" for target, wanted in fragments.items()
                  for fragment in wanted - ids_on.get(target, set()))
    assert dead == [], f"links to missing anchors: {dead}"


def test_a_missing_page_under_the_sub_path_gets_the_styled_404(
        base_url: str, watched_page: tuple[Any, PageWatch]) -> None:
    """Without site_url, 404.html loads /assets/… from the host's root and shows a bare
    page when the site lives under a sub-path."""
    page, watch = watched_page
    missing = base_url + "no/such/page/"
    response = page.goto(missing, wait_until="networkidle")
    assert response is not None and response.status == 404
    # the page's own 404 is expected (the browser logs it too); nothing else may fail
    assert [failure for failure in watch.failures if failure != f"HTTP 404: {missing}"
            and "status of 404" not in failure] == []
    assert page.evaluate("getComputedStyle(document.querySelector('.md-header')).position") \
        == "sticky", "the theme's stylesheet did not load"
    assert page.eval_on_selector("a.md-logo", "a => a.href") == base_url


@pytest.mark.parametrize(("term", "format_name"), SEARCH_TERMS)
def test_search_typed_with_keystrokes_finds_the_spec_page(
        site_dir: Path, base_url: str, watched_page: tuple[Any, PageWatch], term: str,
        format_name: str) -> None:
    if not (site_dir / "formats" / format_name / "index.html").exists():
        pytest.skip(f"the {format_name} spec page is not in this build (module and schema "
                    "both absent)")
    page, watch = watched_page
    page.goto(base_url, wait_until="networkidle")
    page.click("label.md-search__icon, .md-search__input", timeout=10_000)
    search = page.locator("input.md-search__input")
    search.press_sequentially(term, delay=60)
    results = page.locator(".md-search-result__item a")
    results.first.wait_for(timeout=20_000)
    hrefs = results.evaluate_all("links => links.map(a => a.href)")
    assert any(f"/formats/{format_name}/" in href for href in hrefs), hrefs
    assert watch.failures == []


def _complete_example(site_dir: Path) -> tuple[str, str, str]:
    """(conversion page, input path, target) of the first example whose output the page
    shows in full, read from the built HTML."""
    from lxml import html

    for page_file in sorted((site_dir / "conversions").rglob("index.html")):
        tree = html.parse(str(page_file))
        for block in tree.getroot().find_class("dcx-conversion"):
            output_tab = block.xpath(".//div[contains(@class,'tabbed-block')][2]")[0]
            if "dcx writes nothing" in output_tab.text_content():
                continue  # a refused conversion: its output tab holds diagnostics
            codes = output_tab.xpath(".//pre//code")
            text = codes[0].text_content()
            if 0 < len(text.splitlines()) <= MAX_COMPARED_LINES:
                relative = page_file.parent.relative_to(site_dir).as_posix() + "/"
                return relative, block.get("data-input"), block.get("data-target")
    pytest.skip("no conversion example with a complete output in this build")


def test_conversion_output_tab_holds_the_converters_output(
        site_dir: Path, base_url: str, watched_page: tuple[Any, PageWatch]) -> None:
    from dcx.converters.convert import convert

    page_path, input_path, target = _complete_example(site_dir)
    from dcx.converters.folders import folder_format, read_folder

    source = REPO / input_path  # a file, or a folder of a format stored as one
    spec = folder_format(str(source))
    data = read_folder(str(source), spec) if spec is not None else source.read_bytes()
    expected = convert(data, target, input_path)
    assert expected.data, f"{input_path} → {target} produced nothing in the test"

    page, watch = watched_page
    page.goto(base_url + page_path, wait_until="networkidle")
    block = page.locator(f'div.dcx-conversion[data-input="{input_path}"]'
                         f'[data-target="{target}"]')
    block.locator(".tabbed-labels label", has_text=f"Output ({target})").click()
    output = block.locator(".tabbed-block").nth(1)
    output.wait_for(state="visible")
    shown = output.locator("pre code").first.inner_text()
    assert shown.rstrip("\n") == expected.data.decode("utf-8").rstrip("\n")
    # the input tab is hidden now that the output tab is selected
    assert not block.locator(".tabbed-block").nth(0).is_visible()
    assert watch.failures == []


@pytest.mark.parametrize("path", ["reference/loss-matrix/", "formats/environment/"])
def test_wide_pages_fit_a_1400_pixel_window(browser: Any, base_url: str, path: str) -> None:
    """The page itself never scrolls sideways in a 1400 x 900 window (a table may, inside
    its own scroll container); format pages name the JSON Schema dialect right."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        page.goto(base_url + path, wait_until="networkidle")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 1400, f"{path} is {width} px wide"
        assert "draft 20)" not in page.inner_text("body")
    finally:
        context.close()


def test_scheduler_page_shows_no_nan_stays_short_and_shows_plots_whole(
        browser: Any, base_url: str) -> None:
    """Built from real scheduler outputs: no NaN anywhere in the text, a bounded height with
    the plot blocks closed, and once they are open every plot loaded and inside the content
    column, not cut by its container."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        page.goto(base_url + "scheduler/", wait_until="networkidle")
        text = page.inner_text("body")
        assert "Workloads without jobs" in text and "no-jobs.swf" in text
        assert "Workloads not scheduled" in text and "mixed-site.lwf" in text
        assert not re.search(r"\bnan\b", text, re.IGNORECASE), "NaN shown on the page"
        height = page.evaluate("document.documentElement.scrollHeight")
        results_top = page.evaluate(
            "document.getElementById('reproduced-in-this-build').getBoundingClientRect().top"
            " + window.scrollY")
        results = height - results_top
        assert results <= SCHEDULER_RESULTS_MAX_HEIGHT, f"the results take {results} px"
        assert height <= SCHEDULER_PAGE_MAX_HEIGHT, f"scheduler page is {height} px tall"
        page.eval_on_selector_all("details", "nodes => nodes.forEach(n => n.open = true)")
        page.wait_for_load_state("networkidle")
        plots = page.eval_on_selector_all("article img", """images => images.map(img => {
            const box = img.getBoundingClientRect();
            const column = img.closest('article').getBoundingClientRect();
            const parent = img.parentElement;
            return {src: img.src, loaded: img.complete && img.naturalWidth > 0,
                    inside: box.left >= column.left - 1 && box.right <= column.right + 1,
                    cut: parent.scrollWidth > parent.clientWidth + 1,
                    width: box.width};
        })""")
        assert plots, "no plot on the scheduler page"
        # each run's Gantt chart (the workloads experiment records schedules), in its block
        assert any(plot["src"].endswith("gantt.svg") for plot in plots), plots
        bad = [plot for plot in plots
               if not plot["loaded"] or not plot["inside"] or plot["cut"] or plot["width"] < 200]
        assert bad == [], bad
        assert "nan" not in page.inner_text("body").lower().split()
    finally:
        context.close()
