"""What the site holds: generated pages, generated assets, and the navigation."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dcx.converters.registry import FORMATS
from dcxdocs import codes, conversions, formats_pages, peers, reference_pages


@dataclass
class SitePlan:
    repo_root: Path
    pages: dict[str, str] = field(default_factory=dict)
    """Generated Markdown pages by path under docs/."""
    assets: dict[str, bytes] = field(default_factory=dict)
    nav: list[Any] = field(default_factory=list)
    examples: list[conversions.ExampleConversion] = field(default_factory=list)


def build_plan(repo_root: Path) -> SitePlan:
    from dcx.cli.main import build_parser

    plan = SitePlan(repo_root)

    for spec in FORMATS:
        plan.pages[formats_pages.spec_page_path(spec)] = "\n".join(
            part for part in (formats_pages.spec_page(spec),
                              peers.format_section(spec.name, repo_root)) if part)
    plan.pages["formats/index.md"] = formats_pages.overview_page()

    plan.examples = conversions.run_examples(repo_root)
    conversion_pages = conversions.conversion_pages(plan.examples)
    plan.pages.update(conversion_pages)
    plan.pages["conversions/index.md"] = conversions.index_page(conversion_pages, plan.examples)

    plan.pages["reference/loss-matrix.md"] = formats_pages.loss_matrix_page()
    plan.pages["reference/cli.md"] = reference_pages.cli_page(build_parser())
    plan.pages["reference/error-codes.md"] = codes.error_codes_page(codes.catalogue_rows())
    plan.pages[peers.PAGE] = peers.peers_page(repo_root)

    _, svgs, _ = reference_pages.schedule_outputs(repo_root)
    for svg in svgs:
        plan.assets[reference_pages.plot_name(repo_root, svg)] = svg.read_bytes()

    plan.nav = [
        {"Home": "index.md"},
        {"Architecture": "architecture.md"},
        {"Formats": ["formats/index.md",
                     *({spec.title: formats_pages.spec_page_path(spec)} for spec in FORMATS)]},
        {"Conversions": ["conversions/index.md",
                         *({f"From {path.split('/')[1][:-3]}": path}
                           for path in sorted(conversion_pages))]},
        {"Reference": [{"Loss matrix": "reference/loss-matrix.md"},
                       {"CLI": "reference/cli.md"},
                       {"Error codes": "reference/error-codes.md"},
                       {"Security": "reference/security.md"},
                       {"Peers": peers.PAGE}]},
        {"Guides": [{"pre-commit hook": "guides/pre-commit.md"},
                    {"Python API": "api.md"}]},
        {"Scheduler": "scheduler.md"},
        {"Experiments": "experiments.md"},
    ]
    return plan
