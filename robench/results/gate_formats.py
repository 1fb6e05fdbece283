"""How a gate's result is shown: a rich table for the terminal, a markdown table and summary
for CI step summaries and pull requests, JUnit XML for CI test reports. No torch.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from rich.markup import escape
from rich.table import Table

from robench.results.gate import Check, GateResult, Status
from robench.results.gate_checks import display_amount
from robench.results.report import Report

HEADER = ["Check", "Baseline", "Candidate", "Change", "Allowed drop", "Test", "p", "Status"]
STATUS_STYLE = {Status.passed: "green", Status.inconclusive: "yellow", Status.regressed: "red"}


def check_row(check: Check) -> list[str]:
    """The cells of one check, in display units (percent and pp for accuracies, x100 for
    mCE)."""
    display = check.shown
    change = round((check.candidate - check.baseline) * display.scale, 2) + 0.0
    unit = f" {display.diff_unit}" if display.diff_unit else ""
    return [
        check.name,
        f"{check.baseline * display.scale:.2f}",
        f"{check.candidate * display.scale:.2f}",
        f"{change:+.2f}{unit}",
        display_amount(display, check.allowed) if check.allowed is not None else "ignored",
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
                "classname": f"robench.results.gate.{'aggregate.' * check.aggregate}"
                f"{check.perturbation}",
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


def rich_table(result: GateResult) -> Table:
    table = Table(title=f"robench gate: {result.status.value}", title_justify="left")
    for i, name in enumerate(HEADER):
        table.add_column(name, justify="right" if 0 < i < 5 or i == 6 else "left")
    for check in result.checks:
        cells = [escape(cell) for cell in check_row(check)]
        cells[-1] = f"[{STATUS_STYLE[check.status]}]{cells[-1]}[/]"
        table.add_row(*cells)
    return table
