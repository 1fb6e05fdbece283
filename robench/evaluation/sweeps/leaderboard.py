"""A sweep's leaderboards in SWEEP/leaderboard/, from the reports present: per suite the
`robench compare` table (markdown and CSV), and one HTML page linking every job
(docs/sweeps.md, "Status and leaderboards").
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from pathlib import Path

from robench._core.errors import RobenchError
from robench.evaluation.sweeps.sweep import (
    JobStatus,
    LoadedSweep,
    check_folder,
    job_statuses,
    make_folder,
)
from robench.results.compare.comparison import Comparison, build_comparison
from robench.results.compare.formats import COMPARE_FORMATS
from robench.results.report.schema import Report, read_report

__all__ = ["Leaderboards", "collect"]


@dataclass
class Leaderboards:
    """What `collect` wrote and found."""

    tables: dict[str, str] = field(default_factory=dict)  # suite -> markdown table
    files: list[Path] = field(default_factory=list)
    page: Path | None = None
    statuses: list[JobStatus] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _reports(done: list[JobStatus], seeds: int, notes: list[str]) -> list[tuple[str, Report]]:
    """The suite's reports, each row named after its plan entry (and seed); one that cannot
    be read is left out with a note (it never stops the others)."""
    found = []
    for status in done:
        try:
            report = read_report(status.job.report)
        except RobenchError as exc:
            notes.append(f"{status.job.job_id}: left out: {exc}")
            continue
        job = status.job
        name = f"{job.label} (seed {job.seed})" if seeds > 1 else job.label
        model = report.model.model_copy(update={"name": name})
        found.append((str(status.job.report), report.model_copy(update={"model": model})))
    return found


def _link(target: Path, page_dir: Path, text: str) -> str:
    href = Path(os.path.relpath(target, page_dir)).as_posix()
    return f'<a href="{html.escape(href)}">{html.escape(text)}</a>'


def _jobs_section(statuses: list[JobStatus], page_dir: Path) -> str:
    """The page's table of every job: status, report link, log link, error."""
    rows = []
    for s in statuses:
        job = s.job
        report = _link(job.report, page_dir, "report") if s.status == "done" else ""
        log = _link(job.log, page_dir, "log") if job.log.exists() else ""
        detail = "" if s.status == "done" else html.escape(s.detail)
        rows.append(
            f"<tr><td>{html.escape(job.job_id)}</td><td>{html.escape(s.status)}</td>"
            f"<td>{report}</td><td>{log}</td><td>{detail}</td></tr>"
        )
    done = sum(s.status == "done" for s in statuses)
    return (
        '<section id="sweep-jobs"><h2>Jobs of the sweep</h2>'
        f"<p>{done} of {len(statuses)} jobs done.</p>"
        "<table><thead><tr><th>Job</th><th>Status</th><th>Report</th><th>Log</th>"
        "<th>Error</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></section>"
    )


def _page(
    sections: list[tuple[list[tuple[str, Report]], Comparison]],
    statuses: list[JobStatus],
    page_dir: Path,
    title: str,
    figures: bool,
) -> str:
    from robench.results.compare.html import build_section, render_page

    built = [
        build_section(reports, cmp, title=cmp.title, figures=figures) for reports, cmp in sections
    ]
    page = render_page(built, title=title) if built else _empty_page(title)
    jobs = _jobs_section(statuses, page_dir)
    head, tail = page.rsplit("</main>", 1) if "</main>" in page else (page, "")
    return f"{head}{jobs}\n</main>{tail}"


def _empty_page(title: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>'
        f"{html.escape(title)}</title></head><body><h1>{html.escape(title)}</h1><main>"
        "<p>No job has finished yet.</p></main></body></html>\n"
    )


def collect(sweep: LoadedSweep, *, figures: bool = False) -> Leaderboards:
    """Write SWEEP/leaderboard/SUITE.md and .csv per suite with a finished job, and index.html
    (with `figures`, each suite's figures too: matplotlib, about a second per suite)."""
    check_folder(sweep.folder, sweep.path)
    statuses = job_statuses(sweep)
    found = Leaderboards(statuses=statuses)
    folder = sweep.folder / "leaderboard"
    make_folder(folder)
    seeds = len(sweep.plan.seeds)
    sections = []
    for suite in sweep.plan.suites:
        done = [s for s in statuses if s.job.suite == suite and s.status == "done"]
        if not done:
            found.notes.append(f"suite {suite}: no finished job yet, no leaderboard.")
            continue
        reports = _reports(done, seeds, found.notes)
        if not reports:
            continue
        comparison, stem = build_comparison(reports), Path(suite).stem
        comparison.title = f"{stem}: {comparison.title}"
        found.notes += [f"suite {suite}: {note}" for note in comparison.notes]
        sections.append((reports, comparison))
        texts = {f: str(COMPARE_FORMATS.get(f)(comparison, True)) for f in ("markdown", "csv")}
        found.tables[suite] = texts["markdown"]
        for text, suffix in ((texts["markdown"], ".md"), (texts["csv"], ".csv")):
            path = folder / f"{stem}{suffix}"
            path.write_text(text if text.endswith("\n") else text + "\n", "utf-8")
            found.files.append(path)
    page = folder / "index.html"
    title = f"robench sweep: {sweep.plan.name or sweep.path.stem}"
    page.write_text(_page(sections, statuses, folder, title, figures), "utf-8")
    found.page = page
    found.files.append(page)
    return found
