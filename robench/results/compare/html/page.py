"""The page: sections of compared reports (what was compared, leaderboard, figures), the
gate's verdicts and provenance, rendered by Jinja2 (docs/formats.md, "HTML page").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from robench._core.version import __version__
from robench.results.compare.comparison import Comparison
from robench.results.compare.html.figures import PageFigure, section_figures
from robench.results.compare.html.leaderboard import Leaderboard, leaderboard
from robench.results.gate.formats import HEADER as GATE_HEADER
from robench.results.gate.formats import GateSummary
from robench.results.report.schema import DataInfo, Report

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATE = "page.html.j2"


@dataclass(frozen=True)
class Fact:
    term: str
    value: str


@dataclass(frozen=True)
class Provenance:
    """What one model's report records to reproduce it."""

    label: str  # the model's row label
    facts: list[Fact]
    warnings: list[str]


@dataclass(frozen=True)
class PageSection:
    slug: str  # the section's fragment id
    title: str
    facts: list[Fact]  # what was compared: suite, task, dataset and samples
    about: str  # the suites' descriptions
    leaderboard: Leaderboard
    figures: list[PageFigure] = field(default_factory=list)
    provenance: list[Provenance] = field(default_factory=list)
    created_utc: list[str] = field(default_factory=list)  # the reports' evaluation times
    robench_versions: list[str] = field(default_factory=list)  # that wrote the reports


def _distinct(values: Iterable[str]) -> str:
    return "; ".join(dict.fromkeys(values))


# Loader kinds that say how files are read, not what the data is: the folder names it.
_READER_KINDS = {"idx", "image-folder", "imagefolder", "folder", "text-folder"}
# Built-in data drawn from a pool of another data set: kind -> (its unit, what the pool is).
_POOLED = {"fashion-scenes": ("scenes", "composed of fashion-mnist images")}


def _dataset(data: DataInfo) -> str:
    """`fashion-mnist (test): 500 of 10,000 samples`; a built-in by its name
    (`python-docs-sections`, not the folder `_sources`); scenes by their own count."""
    if data.corpus:
        name = str(data.corpus.get("layout", data.kind))
    elif data.kind and data.kind not in _READER_KINDS:
        name = data.kind
    else:
        name = Path(data.path).name or data.kind
    split = f" ({data.split})" if data.split else ""
    subset = f", subset {data.subset}" if data.subset else ""
    if data.kind in _POOLED:
        unit, pool = _POOLED[data.kind]
        return f"{name}{split}: {data.n_samples:,} {unit} {pool}{subset}"
    return f"{name}{split}: {data.n_samples:,} of {data.n_total:,} samples{subset}"


def _section_facts(reports: Sequence[Report]) -> list[Fact]:
    return [
        Fact("Suite", _distinct(f"{r.suite.name} v{r.suite.version}" for r in reports)),
        Fact("Task", _distinct(r.task for r in reports)),
        Fact("Data", _distinct(_dataset(d) for r in reports for d in r.datasets.values())),
        Fact("Models", f"{len(reports)}"),
    ]


def _provenance(label: str, source: str, report: Report) -> Provenance:
    model, env = report.model, report.environment
    libraries = ("python", "torch", "timm", "torchattacks", "pyautoattack")
    versions = {"robench": report.robench_version} | {k: getattr(env, k) for k in libraries}
    facts = {
        "Report": source,
        "Model": model.name,
        "Architecture": model.architecture,
        "Parameters": f"{model.n_parameters:,}",
        "Card": model.card,
        "Checkpoint": model.checkpoint,
        "Checkpoint sha256": model.checkpoint_sha256,
        "Suite sha256": report.suite.sha256,
        "Seed": str(report.seed),
        "Batch size": str(report.batch_size),
        "Wall time": f"{report.wall_time_s:.1f} s",
        "Evaluated (UTC)": report.created_utc,
        "Versions": ", ".join(f"{k} {v}" for k, v in versions.items() if v),
        "Git commit": env.git_sha,
        "Device": f"{env.device}, {env.num_threads} threads",
        "Platform": env.platform,
        "Command": " ".join(report.command),
    }
    shown = [Fact(term, value) for term, value in facts.items() if value]
    return Provenance(label, shown, list(report.warnings))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "results"


def build_section(
    reports: Sequence[tuple[str, Report]],
    comparison: Comparison,
    *,
    title: str | None = None,
    figures: bool = True,
) -> PageSection:
    """A section of `(source, report)` pairs and their comparison (rows in report order)."""
    plain = [report for _, report in reports]
    named = dict(zip(comparison.rows, plain, strict=True))
    heading = title or comparison.title
    return PageSection(
        slug=_slug(heading),
        title=heading,
        facts=_section_facts(plain),
        about=_distinct(r.suite.description for r in plain if r.suite.description),
        leaderboard=leaderboard(comparison),
        figures=section_figures(named) if figures else [],
        provenance=[
            _provenance(label, source, report)
            for label, (source, report) in zip(comparison.rows, reports, strict=True)
        ],
        created_utc=[report.created_utc for report in plain],
        robench_versions=[report.robench_version for report in plain],
    )


def _dates(sections: Sequence[PageSection]) -> str:
    """The reports' evaluation days: one day, or the first and the last."""
    days = sorted({created[:10] for section in sections for created in section.created_utc})
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}" if days else ""


def _environment() -> Environment:
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    return Environment(
        loader=PackageLoader("robench.results.compare.html", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_page(
    sections: Sequence[PageSection], *, title: str, gate: GateSummary | None = None
) -> str:
    """The whole page as one HTML string: no external file, no network."""
    if not sections:
        raise ValueError("a page needs at least one section")
    header = [
        Fact("Reports by", _distinct(f"robench {v}" for s in sections for v in s.robench_versions)),
        Fact("Evaluated", _dates(sections)),
        Fact("Page written by", f"robench {__version__}"),
    ]
    shown = [fact for fact in header if fact.value]
    template = _environment().get_template(TEMPLATE)
    return template.render(
        title=title, header=shown, sections=sections, gate=gate, gate_header=GATE_HEADER
    )
