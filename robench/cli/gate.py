"""`robench gate`: fail CI when a candidate's robustness regressed against a baseline.

Besides the exit code, the gate writes what CI systems show: a markdown summary (`--summary`,
and appended to `$GITHUB_STEP_SUMMARY` when set) and JUnit XML with one testcase per check.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from robench._core.errors import EXIT_OK
from robench.cli._output import err, handle_errors, out
from robench.results.gate import Check, GateResult, Status, exit_code, format_amount, run_gate
from robench.results.gate_policy import read_policy
from robench.results.metrics import metric_display
from robench.results.report import Report, read_report

HEADER = ["Check", "Baseline", "Candidate", "Change", "Allowed drop", "Test", "p", "Status"]
_STATUS_STYLE = {Status.passed: "green", Status.inconclusive: "yellow", Status.regressed: "red"}


def _shown(metric: str, value: float) -> str:
    return f"{value * metric_display(metric).scale:.2f}"


def check_row(check: Check) -> list[str]:
    """The cells of one check, in display units (percent and pp for accuracies)."""
    display = metric_display(check.metric)
    change = round((check.candidate - check.baseline) * display.scale, 2) + 0.0
    unit = f" {display.diff_unit}" if display.diff_unit else ""
    return [
        check.name,
        _shown(check.metric, check.baseline),
        _shown(check.metric, check.candidate),
        f"{change:+.2f}{unit}",
        format_amount(check.metric, check.allowed) if check.allowed is not None else "ignored",
        check.test.name if check.test else "none (no per-sample values)",
        f"{check.test.p_value:.3g}" if check.test else "",
        check.status.value,
    ]


def _model(report: Report) -> str:
    sha = report.model.checkpoint_sha256
    return f"`{report.model.name}`" + (f" (`{sha[:8]}`)" if sha else "")


def markdown_table(result: GateResult) -> str:
    """Every check as a markdown table; checks that did not pass have their status in bold."""
    lines = ["| " + " | ".join(HEADER) + " |", "|---|---:|---:|---:|---:|---|---:|---|"]
    for check in result.checks:
        cells = [cell.replace("|", r"\|") for cell in check_row(check)]
        if check.status is not Status.passed:
            cells[-1] = f"**{cells[-1]}**"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_markdown(result: GateResult) -> str:
    """The markdown summary: verdict, what was compared, every check, details and notes."""
    base, cand = result.baseline, result.candidate
    lines = [
        f"## robench gate: {result.status.value}",
        "",
        f"Candidate {_model(cand)} against baseline {_model(base)}: suite "
        f"`{base.suite.name}` v{base.suite.version}, {base.data.n_samples} paired samples, "
        f"alpha {result.policy.alpha:g}. "
        f"{result.count(Status.regressed)} regressed, {result.count(Status.inconclusive)} "
        f"inconclusive, {result.count(Status.passed)} passed.",
        "",
        markdown_table(result),
    ]
    failing = [c for c in result.checks if c.status is not Status.passed]
    if failing:
        lines += ["", "### Details", ""]
        lines += [f"- **{c.status.value}** `{c.name}`: {c.detail}" for c in failing]
    if result.notes:
        lines += ["", "### Notes", ""]
        lines += [f"- {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


# (status, strict) -> JUnit child element and its `type`; passing checks get none.
_JUNIT_OUTCOME: dict[tuple[Status, bool], tuple[str, str | None]] = {
    (Status.regressed, False): ("failure", "regression"),
    (Status.regressed, True): ("failure", "regression"),
    (Status.inconclusive, False): ("skipped", None),
    (Status.inconclusive, True): ("failure", "inconclusive"),
}


def junit_xml(result: GateResult, strict: bool) -> ET.ElementTree:
    """One testsuite, one testcase per check; a failure per regression (and per inconclusive
    check under --strict, else a skipped element)."""
    suite_name = f"{result.baseline.suite.name} v{result.baseline.suite.version}"
    outcomes = [_JUNIT_OUTCOME.get((c.status, strict)) for c in result.checks]
    counts = {
        "tests": str(len(result.checks)),
        "failures": str(sum(o is not None and o[0] == "failure" for o in outcomes)),
        "errors": "0",
        "skipped": str(sum(o is not None and o[0] == "skipped" for o in outcomes)),
        "time": "0",
    }
    root = ET.Element("testsuites", {"name": "robench gate", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": f"robench gate: {suite_name}", **counts})
    for check, outcome in zip(result.checks, outcomes, strict=True):
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": f"robench.results.gate.{check.perturbation}",
                "name": check.name,
                "time": "0",
            },
        )
        if outcome is not None:
            tag, kind = outcome
            element = ET.SubElement(case, tag, {"message": check.detail})
            if kind is not None:
                element.set("type", kind)
                element.text = " | ".join(check_row(check))
        ET.SubElement(case, "system-out").text = check.detail
    ET.indent(root)
    return ET.ElementTree(root)


def _rich_table(result: GateResult) -> Table:
    table = Table(title=f"robench gate: {result.status.value}", title_justify="left")
    for i, name in enumerate(HEADER):
        table.add_column(name, justify="right" if 0 < i < 5 or i == 6 else "left")
    for check in result.checks:
        cells = [escape(cell) for cell in check_row(check)]
        cells[-1] = f"[{_STATUS_STYLE[check.status]}]{cells[-1]}[/]"
        table.add_row(*cells)
    return table


def _write_outputs(result: GateResult, summary: Path | None, junit: Path | None, strict: bool):
    text = summary_markdown(result)
    if summary is not None:
        summary.parent.mkdir(parents=True, exist_ok=True)
        summary.write_text(text, encoding="utf-8")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit_xml(result, strict).write(junit, encoding="utf-8", xml_declaration=True)


@handle_errors
def gate_command(
    baseline: Annotated[
        Path, typer.Option("--baseline", "-b", help="Report of the accepted model (committed).")
    ],
    candidate: Annotated[
        Path, typer.Option("--candidate", "-c", help="Report of the model under test.")
    ],
    policy: Annotated[
        Path | None,
        typer.Option(help="Policy TOML with tolerances and alpha (default: built-in policy)."),
    ] = None,
    summary: Annotated[
        Path | None, typer.Option(help="Write a markdown summary here (CI step summary).")
    ] = None,
    junit: Annotated[
        Path | None, typer.Option(help="Write JUnit XML here, one testcase per check.")
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 4 when a check is inconclusive.")
    ] = False,
) -> None:
    """Gate a candidate report against a baseline with paired tests; exit 1 on a regression.

    Every perturbation and metric of the baseline is a check. A drop within the policy's
    tolerance passes; beyond it, a one-sided paired test (exact McNemar on per-sample
    correctness) decides: significant at alpha -> regressed, otherwise inconclusive with an
    estimate of the samples needed. Both reports must share suite, version and samples.
    Built-in policy: alpha 0.05; clean top1 may drop 1 pp, everything else 2 pp.

    Exit codes: 0 pass (or inconclusive without --strict), 1 regression, 2 bad input,
    4 inconclusive with --strict.

    Examples:
      robench gate --baseline reports/baselines/deit.json --candidate runs/deit.json
      robench gate -b base.json -c new.json --policy gate.toml --summary gate.md
      robench gate -b base.json -c new.json --junit gate.xml
      robench gate -b base.json -c new.json --strict
    """
    result = run_gate(read_report(baseline), read_report(candidate), read_policy(policy))
    if out.is_terminal:
        out.print(_rich_table(result))
    else:
        typer.echo(markdown_table(result))
    _write_outputs(result, summary, junit, strict)
    for note in result.notes:
        err.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    for check in result.checks:
        if check.status is not Status.passed:
            style = _STATUS_STYLE[check.status]
            err.print(
                f"[{style}]{check.status.value}:[/] {escape(check.name)}: {escape(check.detail)}",
                highlight=False,
            )
    code = exit_code(result.status, strict)
    if result.status is Status.inconclusive and code == EXIT_OK:
        err.print(
            "[yellow]warning:[/] inconclusive checks do not fail the gate without --strict.",
            highlight=False,
        )
    err.print(
        f"gate {result.status.value}: {result.count(Status.regressed)} regressed, "
        f"{result.count(Status.inconclusive)} inconclusive, {result.count(Status.passed)} passed",
        highlight=False,
    )
    if code != EXIT_OK:
        raise typer.Exit(code)
