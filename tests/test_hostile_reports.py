"""Hostile reports for `robench compare --at-eps` and the html page (issue 39): a min_norm
column shorter than the result's samples (was read as if whole), of strings, or a
minimal-norm result without its cap `params.eps` (both were exit 3)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import refused
from report_factory import make_report

from robench._core.errors import ConfigError
from robench.results.report.schema import MetricValue, PerturbationResult, read_report
from robench.results.stats.metrics import wilson_interval
from robench.results.stats.robustness_curves import eps_curve

NORMS = [0.0, 1 / 255, 2 / 255, None]


def _minimal_norm_report(path: Path) -> Path:
    """A report with one FMN result (cap 4/255) over four samples with NORMS."""
    report = make_report(accuracies={"clean": 1.0}, n=len(NORMS))
    robust = [v is None for v in NORMS]
    top1 = MetricValue(value=0.25, ci95=wilson_interval(1, 4), higher_is_better=True)
    fmn = PerturbationResult(
        name="fmn", kind="minimal-norm", params={"eps": 4 / 255, "norm": "linf", "steps": 10},
        n_samples=len(NORMS), wall_time_s=1.0, metrics={"top1": top1},
    )  # fmt: skip
    values = {**report.samples["default"].values, "fmn": {"top1": robust, "min_norm": NORMS}}
    samples = report.samples["default"].model_copy(update={"values": values})
    report = report.model_copy(
        update={"results": [*report.results, fmn], "samples": {"default": samples}}
    )
    path.write_text(report.model_dump_json(), encoding="utf-8")
    return path


def _edit(change: Callable[[dict], None]) -> Callable[[Path], Path]:
    def build(path: Path) -> Path:
        data = json.loads(_minimal_norm_report(path).read_text(encoding="utf-8"))
        change(data)
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    return build


def _norms(values: list) -> Callable[[dict], None]:
    def change(data: dict) -> None:
        data["samples"]["default"]["values"]["fmn"]["min_norm"] = values

    return change


def _no_cap(data: dict) -> None:
    del data["results"][-1]["params"]["eps"]


def _cap_as_text(data: dict) -> None:
    data["results"][-1]["params"]["eps"] = "4/255"


CASES = {
    "fewer norms than samples": (_edit(_norms([0.0, 1 / 255])), "2 per-sample min_norm values"),
    "norms of strings": (_edit(_norms(["a", "b", "c", "d"])), "holds 'a'"),
    "a negative norm": (_edit(_norms([-1.0, 0.0, 0.0, 0.0])), "holds -1.0"),
    "a boolean norm": (_edit(_norms([True, 0.0, 0.0, 0.0])), "holds True"),
    "no params.eps": (_edit(_no_cap), "params.eps None"),
    "params.eps a string": (_edit(_cap_as_text), "'4/255'"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_compare_at_eps_refuses_a_broken_minimal_norm_result(tmp_path: Path, case: str) -> None:
    build, expected = CASES[case]
    path = build(tmp_path / "r.json")
    args = ["compare", path, "--at-eps", "1/255", "-f", "markdown"]
    refused(args, tmp_path, f"report {path}", "'fmn'", expected, "evaluate again")


@pytest.mark.parametrize("case", list(CASES))
def test_the_page_refuses_them_too(tmp_path: Path, case: str) -> None:
    build, expected = CASES[case]
    path = build(tmp_path / "r.json")
    refused(["compare", path, "-o", tmp_path / "page.html"], tmp_path, expected)


def test_a_whole_column_still_reads(tmp_path: Path) -> None:
    report = read_report(_minimal_norm_report(tmp_path / "r.json"))
    assert eps_curve(report, report.results[-1]).value[0] == 0.75
    broken = read_report(_edit(_norms([0.0]))(tmp_path / "s.json"))
    with pytest.raises(ConfigError, match="1 per-sample min_norm values for its 4 samples"):
        eps_curve(broken, broken.results[-1])
