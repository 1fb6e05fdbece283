"""Rich tables never cut a number: at any width they pick a layout that fits.

The comparison of the committed demo reports (2 models x 18 columns) is rendered at 40 to 200
columns; every number of its json format must appear whole, and nothing is ellipsised.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest
from report_factory import make_report
from rich.console import Console

from robench.results.compare.comparison import Comparison, build_comparison
from robench.results.compare.formats import COMPARE_FORMATS, RichComparison
from robench.results.compare.tables import (
    diagnostic_rows,
    label_width,
    report_rows,
    rich_table,
    wrap_label,
)
from robench.results.report.schema import Report, SanityResult, read_report

DEMO_REPORTS = Path(__file__).resolve().parents[1] / "reports" / "demo"
WIDTHS = [40, 60, 80, 120, 200]


def _demo(reference: int | None = None, metrics: list[str] | None = None) -> Comparison:
    reports = [
        (str(path), read_report(path))
        for path in (DEMO_REPORTS / "baseline.json", DEMO_REPORTS / "elliptical.json")
    ]
    return build_comparison(reports, reference=reference, metrics=metrics)


def _render(renderable: object, width: int, color: bool = False) -> str:
    console = Console(
        width=width,
        file=io.StringIO(),
        force_terminal=color,
        color_system="standard" if color else None,
    )
    console.print(renderable)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    return text


def _shown(number: float, sign: bool = False) -> str:
    """A number as the tables show it: 2 decimals, differences signed, never -0.00."""
    return f"{round(number, 2) + 0.0:{'+' if sign else ''}.2f}"


def _expected_numbers(cmp: Comparison, ci: bool) -> list[str]:
    """Every number the json format holds, as the tables print it."""
    payload = json.loads(str(COMPARE_FORMATS.get("json")(cmp, ci)))
    numbers = []
    for row in payload["rows"]:
        for cell in row["cells"].values():
            numbers.append(_shown(cell["value"]))
            if "diff" in cell and row["model"] != payload["reference"]:
                numbers.append(f"({_shown(cell['diff'], sign=True)})")
            if ci:
                low, high = cell["ci95"]
                numbers.append(f"[{_shown(low)}, {_shown(high)}]")
    return numbers


def _assert_all_shown(text: str, numbers: list[str], width: int) -> None:
    missing = [n for n, count in Counter(numbers).items() if text.count(n) < count]
    assert not missing, f"numbers missing or cut at width {width}: {missing}\n{text}"
    assert "…" not in text
    too_wide = [line for line in text.splitlines() if len(line) > width]
    assert not too_wide, f"lines wider than {width}: {too_wide}"


CASES = {
    "plain": ({}, False),
    "ci": ({}, True),
    "reference": ({"reference": 0}, False),
    "reference+ci": ({"reference": 1}, True),
    "top1": ({"metrics": ["top1"]}, False),
    "top1+reference+ci": ({"metrics": ["top1"], "reference": 0}, True),
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", CASES)
def test_comparison_shows_every_number_at_every_width(case: str, width: int) -> None:
    kwargs, ci = CASES[case]
    cmp = _demo(**kwargs)  # type: ignore[arg-type]
    text = _render(COMPARE_FORMATS.get("rich")(cmp, ci), width)
    _assert_all_shown(text, _expected_numbers(cmp, ci), width)
    assert "↑" in text and cmp.title in text
    assert ("(ref)" in text) == (cmp.reference is not None)


def test_the_paper_shape_is_kept_where_it_fits() -> None:
    cmp = _demo()
    console = Console(width=200, file=io.StringIO(), color_system=None)
    assert RichComparison(cmp, False).choose(console, console.options)[0] == "wide"
    narrow = Console(width=80, file=io.StringIO(), color_system=None)
    assert RichComparison(cmp, False).choose(narrow, narrow.options)[0] == "models-as-columns"
    one_metric = _demo(metrics=["top1"])
    text = _render(COMPARE_FORMATS.get("rich")(one_metric, False), 200)
    assert text.splitlines()[1].startswith("┏")  # one header row of models ...
    assert sum("vit_nano" in line for line in text.splitlines()) == 2  # ... one row per model


def _paper_comparison() -> Comparison:
    """Three models, so that every column has a best and a second best."""
    accuracies = [
        {"clean": 0.7223, "fgsm": 0.5261},
        {"clean": 0.7236, "fgsm": 0.5464},
        {"clean": 0.7980, "fgsm": 0.5000},
    ]
    reports = [
        (f"{i}.json", make_report(f"model_{i}", acc, n=10_000)) for i, acc in enumerate(accuracies)
    ]
    return build_comparison(reports, reference=0, metrics=["top1"])


@pytest.mark.parametrize("ci", [False, True])
def test_every_layout_keeps_marks_arrows_reference_differences_and_intervals(ci: bool) -> None:
    cmp = _paper_comparison()
    layouts = RichComparison(cmp, ci).layouts()
    assert {"wide", "models-as-columns", "per-model", "per-model-narrow"} <= set(layouts)
    for name, build in layouts.items():
        text = _render(build(0), 300, color=True)
        assert "\x1b[1m79.80\x1b[0m" in text, name  # clean: best bold
        assert "\x1b[4m72.36\x1b[0m" in text, name  # clean: second underlined
        assert "\x1b[1m54.64\x1b[0m" in text and "\x1b[4m52.61\x1b[0m" in text, name
        plain = _render(build(0), 300)
        assert "↑" in plain and "(ref)" in plain, name
        assert "(+0.13)" in plain and "(-2.61)" in plain, name
        assert ("[" in plain) == ci, name


def test_labels_wrap_at_words_then_after_hyphens_and_underscores() -> None:
    assert wrap_label("top-1 (%) ↑", 6) == "top-1\n(%) ↑"
    assert wrap_label("vit_nano_elliptical_fmnist", 12) == "vit_nano_\nelliptical_\nfmnist"
    assert wrap_label("autoattack-lite-2", 17) == "autoattack-lite-2"
    assert wrap_label("autoattack-lite-2", 8) == "autoatta\nck-lite-\n2"  # folded, not cut
    assert label_width("autoattack-lite-2 top-1") == 17
    assert label_width("autoattack-lite-2 top-1", hyphenate=True) == 11


def _with_sanity(report: Report) -> Report:
    check = SanityResult(
        name="pgd_at_least_fgsm",
        status="warn",
        detail="PGD accuracy 33.40% is above FGSM accuracy 12.25% at 8/255; gradients may be "
        "masked, check the attack's step size.",
        values={"pgd": 0.334, "fgsm": 0.1225},
    )
    return report.model_copy(update={"sanity": [check]})


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_report_table_shows_every_number(width: int) -> None:
    report = _with_sanity(read_report(DEMO_REPORTS / "elliptical.json"))
    text = _render(rich_table(report), width)
    numbers = [cell for row in report_rows(report) for cell in row[3:]]
    scalars = [
        word.rstrip(",")
        for _, values in diagnostic_rows(report)
        for word in values.split()
        if word[0].isdigit()
    ]
    _assert_all_shown(text, numbers + scalars + ["33.40%", "12.25%"], width)
    assert "Sanity battery" in text and "warn" in text
