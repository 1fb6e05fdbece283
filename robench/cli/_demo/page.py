"""The demo's `index.html`: one self-contained section per group of reports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from robench.results.compare.comparison import Comparison
from robench.results.report.schema import Report

if TYPE_CHECKING:
    from robench.results.compare.html.figures import PageFigure

__all__ = ["write_index"]


def write_index(
    out_dir: Path,
    groups: list[tuple[str, list[tuple[Path, Report]], Comparison]],
    *,
    extra_figures: Mapping[str, Sequence[PageFigure]] | None = None,
    about: Mapping[str, str] | None = None,
) -> Path:
    """`OUT_DIR/index.html`: one section per (title, reports, comparison), self-contained;
    `extra_figures` (section title -> figures) follow the figures drawn from the reports;
    `about` (section title -> text) replaces a section's suite description."""
    from robench.results.compare.html import build_section, render_page

    sections = []
    for title, reports, comparison in groups:
        if not reports:
            continue
        section = build_section(
            [(path.name, report) for path, report in reports], comparison, title=title
        )
        extra = list((extra_figures or {}).get(title, []))
        shown = (about or {}).get(title, section.about)
        sections.append(replace(section, figures=[*section.figures, *extra], about=shown))
    page = render_page(sections, title="robench demo: baseline vs Elliptical nano models")
    path = out_dir / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
