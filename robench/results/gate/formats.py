"""How a gate's result is shown: a rich table for the terminal, a markdown table and summary
for CI step summaries and pull requests, JUnit XML for CI test reports, and a JSON summary
(`GateSummary`) that other tools read back (`robench compare --format html --gate`). No torch.
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from robench._core.errors import ConfigError
from robench._core.toml_files import describe_validation_error
from robench.results.gate.checks import display_amount
from robench.results.gate.regression import Check, GateResult, Status, exit_code
from robench.results.report.output_formats import GATE_FORMATS as GATE_FORMATS
from robench.results.report.output_formats import register_format
from robench.results.report.schema import Report, load_json

HEADER = [
    "Check",
    "Baseline",
    "Candidate",
    "Change",
    "Allowed drop",
    "Test",
    "p",
    "Adjusted p",
    "Status",
]
STATUS_STYLE = {Status.passed: "green", Status.inconclusive: "yellow", Status.regressed: "red"}


def check_row(check: Check) -> dict[str, str]:
    """`HEADER` -> the cell of one check, in display units (pp for accuracies, x100 for mCE)."""
    display, test = check.shown, check.test
    change = round((check.candidate - check.baseline) * display.scale, 2) + 0.0
    unit = f" {display.diff_unit}" if display.diff_unit else ""
    cells = [
        check.name,
        f"{check.baseline * display.scale:.2f}",
        f"{check.candidate * display.scale:.2f}",
        f"{change:+.2f}{unit}",
        display_amount(display, check.allowed) if check.allowed is not None else "ignored",
        test.name if test else "none (no per-sample values)",
        f"{test.p_value:.3g}" if test else "",
        f"{test.adjusted_p:.3g}" if test and test.adjusted_p is not None else "",
        check.status.value,
    ]
    return dict(zip(HEADER, cells, strict=True))


def _family_text(result: GateResult) -> str:
    """How the checks' p-values were adjusted, for the summary's first paragraph."""
    sequential = result.candidate.sequential
    if sequential is not None and sequential.stopping == "gate verdict":
        tested = sum(c.test is not None for c in result.checks)
        level = "alpha" if result.policy.multiple_testing == "none" else "Bonferroni alpha / m"
        return (
            f"sequential paired tests on {tested} checks, each at {level}, on the first "
            f"{sequential.n_stopped} of {sequential.n_available} samples in a seeded random order"
        )
    tested = sum(c.test is not None and c.test.adjusted_p is not None for c in result.checks)
    method = result.policy.multiple_testing
    if method == "none":
        return f"p-values unadjusted across {tested} tested checks"
    name = {"holm": "Holm-Bonferroni (family-wise error)", "benjamini-hochberg":
            "Benjamini-Hochberg (false discovery rate)"}[method]  # fmt: skip
    return f"p-values adjusted by {name} across {tested} tested checks"


def _paired_samples(result: GateResult) -> int:
    """Samples the checks paired: the baseline's, or where a sequential gate stopped."""
    sequential = result.candidate.sequential
    return sequential.n_stopped if sequential is not None else result.baseline.data.n_samples


def _model(report: Report) -> str:
    sha = report.model.checkpoint_sha256
    return f"`{report.model.name}`" + (f" (`{sha[:8]}`)" if sha else "")


def markdown_table(result: GateResult) -> str:
    """Every check as a markdown table; checks that did not pass have their status in bold."""
    lines = ["| " + " | ".join(HEADER) + " |", "|---|---:|---:|---:|---:|---|---:|---:|---|"]
    for check in result.checks:
        cells = [cell.replace("|", r"\|") for cell in check_row(check).values()]
        if check.status is not Status.passed:
            cells[-1] = f"**{cells[-1]}**"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# The files `robench gate` writes (--summary, --junit, --json, --output NAME=PATH) are the
# formats registered in GATE_FORMATS: name -> rendering and suffix.


@register_format("gate", "summary", ".md")
def summary_markdown(result: GateResult, strict: bool = False) -> str:
    """The markdown summary: verdict, what was compared, every check, details and notes
    (`strict`, taken as every gate format takes it, changes no verdict shown)."""
    base, cand = result.baseline, result.candidate
    lines = [
        f"## robench gate: {result.status.value}",
        "",
        f"Candidate {_model(cand)} against baseline {_model(base)}: suite "
        f"`{base.suite.name}` v{base.suite.version}, {_paired_samples(result)} paired samples, "
        f"alpha {result.policy.alpha:g}, {_family_text(result)}. "
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


@register_format("gate", "junit", ".xml")
def junit_text(result: GateResult, strict: bool) -> str:
    """JUnit XML: one testsuite, one testcase per check; a failure per regression (and per
    inconclusive check under --strict, else a skipped element)."""
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
        classname = f"robench.results.gate.regression.{'aggregate.' * check.aggregate}"
        attributes = {"classname": classname + check.perturbation, "name": check.name, "time": "0"}
        case = ET.SubElement(suite, "testcase", attributes)
        if outcome is not None:
            tag, kind = outcome
            element = ET.SubElement(case, tag, {"message": check.detail})
            if kind is not None:
                element.set("type", kind)
                element.text = " | ".join(check_row(check).values())
        ET.SubElement(case, "system-out").text = check.detail
    ET.indent(root)
    buffer = io.BytesIO()
    ET.ElementTree(root).write(buffer, encoding="utf-8", xml_declaration=True)
    return buffer.getvalue().decode("utf-8")


# --- JSON summary ---------------------------------------------------------------------------

GATE_JSON_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GateModel(_Strict):
    name: str  # the model's name in its report
    checkpoint_sha256: str | None


class GateCheckSummary(_Strict):
    name: str  # `perturbation/metric`, or the aggregate's name
    perturbation: str
    metric: str
    aggregate: bool
    higher_is_better: bool
    baseline: float  # stored units (fractions for accuracies)
    candidate: float
    n: int  # paired samples
    drop: float  # positive when the candidate is worse, stored units
    allowed: float | None  # allowed drop, stored units; None when the policy ignores it
    test: str | None  # the paired test, None without per-sample values
    p_value: float | None
    # The p-value adjusted across the gate's checks, which alpha decided on (None: untested;
    # absent from summaries written before adjustment existed).
    adjusted_p: float | None = None
    samples_needed: int | None  # to decide an inconclusive check
    status: Literal["pass", "inconclusive", "regressed"]
    detail: str  # one sentence saying why
    # The cells as the markdown table shows them: HEADER -> text (display units).
    shown: dict[str, str]


class GateSummary(_Strict):
    robench_gate: int = GATE_JSON_VERSION  # version of this format
    status: Literal["pass", "inconclusive", "regressed"]  # the worst check's
    exit_code: int  # what `robench gate` exited with (0 pass, 1 regression, 4 strict)
    strict: bool
    suite: str
    suite_version: int
    n_samples: int  # paired samples of the default dataset
    alpha: float
    multiple_testing: str = "none"  # how p-values were adjusted; "none" before it existed
    baseline: GateModel
    candidate: GateModel
    counts: dict[str, int]  # status -> number of checks
    checks: list[GateCheckSummary]
    notes: list[str]


# The summary's fields a `Check` has under the same name.
_CHECK_FIELDS = ["name", "perturbation", "metric", "aggregate", "higher_is_better", "baseline"]
_CHECK_FIELDS += ["candidate", "n", "drop", "allowed", "detail"]


def gate_summary(result: GateResult, strict: bool) -> GateSummary:
    """Every check with its numbers, display cells and verdict, as one validated object."""
    checks = [
        GateCheckSummary(
            **{name: getattr(c, name) for name in _CHECK_FIELDS},
            test=c.test.name if c.test else None,
            p_value=c.test.p_value if c.test else None,
            adjusted_p=c.test.adjusted_p if c.test else None,
            samples_needed=c.test.samples_needed if c.test else None,
            status=c.status.value,
            shown=check_row(c),
        )
        for c in result.checks
    ]
    base = result.baseline
    return GateSummary(
        status=result.status.value,
        exit_code=exit_code(result.status, strict),
        strict=strict,
        suite=base.suite.name,
        suite_version=base.suite.version,
        n_samples=base.data.n_samples,
        alpha=result.policy.alpha,
        multiple_testing=result.policy.multiple_testing,
        baseline=GateModel.model_validate(base.model, from_attributes=True),
        candidate=GateModel.model_validate(result.candidate.model, from_attributes=True),
        counts={status.value: result.count(status) for status in Status},
        checks=checks,
        notes=list(result.notes),
    )


@register_format("gate", "json", ".json")
def gate_json(result: GateResult, strict: bool) -> str:
    """The `GateSummary` as indented JSON (`robench gate --json`)."""
    return json.dumps(gate_summary(result, strict).model_dump(mode="json"), indent=2) + "\n"


def read_gate_summary(path: Path) -> GateSummary:
    """Load a file written by `robench gate --json`; a wrong file is one ConfigError."""
    data = load_json(path, "gate summary", "write one with `robench gate ... --json PATH`")
    if not isinstance(data, dict) or data.get("robench_gate") != GATE_JSON_VERSION:
        raise ConfigError(
            f"{path} is not a gate summary of format {GATE_JSON_VERSION}; write one with "
            "`robench gate ... --json PATH`."
        )
    try:
        return GateSummary.model_validate(data)
    except ValidationError as exc:
        detail = describe_validation_error(exc)
        raise ConfigError(f"gate summary {path} is malformed at {detail}.") from None
