"""Rich tables never cut a number: at any width they pick a layout that fits.

The comparison of the committed demo reports (2 models x 18 columns) is rendered at 40 to 200
columns; every number of its json format must appear whole, and nothing is ellipsised. Every
table the demo, `robench compare` and `robench eval` print for the committed demo reports fits
80 and 120 columns, on a terminal (rich) and piped (markdown, condensed where wide).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest
from report_factory import make_report
from rich.cells import cell_len
from rich.console import Console

from robench.cli._demo import DemoResult
from robench.results.compare.comparison import Comparison, build_comparison
from robench.results.compare.formats import COMPARE_FORMATS, RichComparison, markdown_fitting
from robench.results.compare.html.leaderboard import leaderboard
from robench.results.compare.per_corruption import (
    PER_CORRUPTION_FORMATS,
    build_per_corruption,
    markdown_per_corruption_fitting,
)
from robench.results.compare.tables import (
    REPORT_FORMATS,
    diagnostic_rows,
    label_width,
    report_rows,
    rich_table,
    wrap_label,
)
from robench.results.compare.tables import markdown_fitting as report_markdown_fitting
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
        if name.startswith("per-model"):
            # A table per model: each row holds one value, so none is marked best or second.
            for value in ("79.80", "72.36", "54.64", "52.61"):
                assert f"\x1b[1m{value}" not in text and f"\x1b[4m{value}" not in text, name
                assert value in text, name
        else:
            assert "\x1b[1m79.80\x1b[0m" in text, name  # clean: best bold
            assert "\x1b[4m72.36\x1b[0m" in text, name  # clean: second underlined
            assert "\x1b[1m54.64\x1b[0m" in text and "\x1b[4m52.61\x1b[0m" in text, name
        plain = _render(build(0), 300)
        assert "↑" in plain and "(ref)" in plain, name
        assert "(+0.13)" in plain and "(-2.61)" in plain, name
        assert ("[" in plain) == ci, name


def test_markdown_marks_only_where_values_stand_side_by_side() -> None:
    """Piped narrow, the markdown falls back to a table per model: a row there holds one
    value with no neighbour to beat, so nothing is bold or underlined; wider layouts keep the
    marks. One model, or a column whose values tie, marks nothing in any layout (the HTML
    page's leaderboard included)."""
    cmp = _paper_comparison()
    per_model = markdown_fitting(cmp, True, 40)
    assert "Value |" in per_model and "79.80" in per_model and "(+0.13)" in per_model
    assert "**" not in per_model and "<u>" not in per_model
    assert "**79.80**" in markdown_fitting(cmp, False, 200)
    assert "<u>72.36</u>" in markdown_fitting(cmp, False, 80)
    alone = build_comparison([("0.json", make_report("solo", {"clean": 0.7, "fgsm": 0.5}))])
    tied = build_comparison(
        [(f"{i}.json", make_report(f"m{i}", {"clean": 0.7, "fgsm": 0.5})) for i in range(2)]
    )
    for lonely in (alone, tied):
        for width in (40, 200):
            text = markdown_fitting(lonely, False, width)
            assert "70.00" in text and "**" not in text and "<u>" not in text, width
        for name, build in RichComparison(lonely, False).layouts().items():
            colored = _render(build(0), 300, color=True)
            assert "\x1b[1m70.00" not in colored and "\x1b[4m70.00" not in colored, name
        board = leaderboard(lonely)  # the HTML page's table
        assert all(cell.mark == "" for row in board.rows for cell in row.cells)
    marked = [cell.mark for row in leaderboard(cmp).rows for cell in row.cells]
    assert "best" in marked and "second" in marked


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


# Every table `robench demo`, `robench compare` and `robench eval` print for the committed demo
# reports fits 80 and 120 columns: on a terminal (rich) and piped (markdown, condensed).
DEMO_SECTIONS = ["", "-corruptions", "-text", "-segmentation", "-text-classification"]
FIT_WIDTHS = [80, 120]


def _section(suffix: str) -> list[tuple[str, Report]]:
    paths = [DEMO_REPORTS / f"{role}{suffix}.json" for role in ("baseline", "elliptical")]
    return [(str(path), read_report(path)) for path in paths]


def _assert_fits(text: str, width: int) -> None:
    too_wide = [line for line in text.splitlines() if cell_len(line) > width]
    assert not too_wide, f"lines wider than {width}: {too_wide}"


@pytest.mark.parametrize("width", FIT_WIDTHS)
@pytest.mark.parametrize("ci", [False, True])
@pytest.mark.parametrize("suffix", DEMO_SECTIONS)
def test_compare_tables_of_every_demo_section_fit(suffix: str, ci: bool, width: int) -> None:
    cmp = build_comparison(_section(suffix))
    rich = _render(COMPARE_FORMATS.get("rich")(cmp, ci), width)
    _assert_all_shown(rich, _expected_numbers(cmp, ci), width)
    piped = markdown_fitting(cmp, ci, width)
    _assert_fits(piped, width)
    for number in _expected_numbers(cmp, ci):
        assert number in piped, (number, piped)
    if width == 120 and not ci and suffix == "-segmentation":  # 38 columns: condensed
        assert piped.splitlines()[0].startswith("| Perturbation | Metric |")


def test_markdown_keeps_the_paper_shape_where_it_fits() -> None:
    cmp = build_comparison(_section("-text"), metrics=["perplexity"])
    assert markdown_fitting(cmp, False, 120) == COMPARE_FORMATS.get("markdown")(cmp, False)


@pytest.mark.parametrize("width", FIT_WIDTHS)
@pytest.mark.parametrize("suffix", ["-corruptions", "-segmentation"])
@pytest.mark.parametrize("fmt", ["rich", "markdown"])
def test_per_corruption_tables_fit(suffix: str, fmt: str, width: int) -> None:
    table = build_per_corruption(_section(suffix))
    assert table.metric == ("miou" if suffix == "-segmentation" else "top1")
    if fmt == "markdown":
        text = markdown_per_corruption_fitting(table, width)
    else:
        text = _render(PER_CORRUPTION_FORMATS.get(fmt)(table), width)
    _assert_fits(text, width)
    assert "mean" in text and "…" not in text


@pytest.mark.parametrize("width", FIT_WIDTHS)
@pytest.mark.parametrize("fmt", ["rich", "markdown"])
@pytest.mark.parametrize("name", sorted(p.name for p in DEMO_REPORTS.glob("*.json")))
def test_eval_tables_of_every_demo_report_fit(name: str, fmt: str, width: int) -> None:
    report = read_report(DEMO_REPORTS / name)
    if fmt == "markdown":  # what `robench eval` prints on a pipe (COLUMNS characters)
        text = report_markdown_fitting(report, width)
    else:
        text = _render(REPORT_FORMATS.get(fmt)(report), width)
    _assert_fits(text, width)
    for row in report_rows(report):
        assert row[3] in text and row[4] in text


def _demo_result() -> DemoResult:
    """What `run_demo` returns, rebuilt from the committed demo reports."""
    from robench.cli._demo import DemoResult
    from robench.cli._demo.segmentation import METRICS, SegmentationDemo
    from robench.cli._demo.text_classification import TextClassificationDemo

    def pair(suffix: str) -> list[tuple[Path, Report]]:
        return [(Path(path), report) for path, report in _section(suffix)]

    def compared(found: list[tuple[Path, Report]], metrics: list[str]) -> Comparison:
        return build_comparison([(str(p), r) for p, r in found], metrics=metrics)

    text, subword = pair("-text"), [(DEMO_REPORTS / "gpt2-bpe-text.json",)]
    subword_pairs = [(p, read_report(p)) for (p,) in subword]
    segmentation, classification = pair("-segmentation"), pair("-text-classification")
    example = "baseline: 'handle' -> 'hnadle', 'signals' -> 'singals' " * 4 + "(17 words)"
    return DemoResult(
        pair(""),
        compared(pair(""), ["top1"]),
        pair("-corruptions"),
        compared(pair("-corruptions"), ["top1"]),
        text,
        compared(text, ["perplexity", "bits_per_byte"]),
        subword_pairs,
        compared(subword_pairs, ["bits_per_byte", "perplexity"]),
        SegmentationDemo(segmentation, compared(segmentation, METRICS), []),
        TextClassificationDemo(
            classification,
            compared(classification, ["top1", "attack_success_rate", "queries_mean"]),
            [example],
        ),
    )


@pytest.mark.parametrize("width", FIT_WIDTHS)
@pytest.mark.parametrize("terminal", [True, False])
def test_everything_the_demo_prints_fits(width: int, terminal: bool) -> None:
    from robench.cli.demo import DemoPrinter

    console = Console(width=width, file=io.StringIO(), force_terminal=terminal, color_system=None)
    DemoPrinter(console, width).show(_demo_result())
    text = console.file.getvalue()  # type: ignore[attr-defined]
    _assert_fits(text, width)
    assert "…" not in text
    # The segmentation section is condensed: no corruption x severity column or row.
    assert "demo:fog-3" not in text and "mIoU (%) under corruptions" in text
    assert "corr." in text  # the mean mIoU under corruption, beside clean and PGD


@pytest.mark.parametrize("width", FIT_WIDTHS)
@pytest.mark.parametrize("suffix", DEMO_SECTIONS)
def test_piped_compare_fits_columns_and_a_file_keeps_the_paper_shape(
    suffix: str, width: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from robench.cli import app

    monkeypatch.setenv("COLUMNS", str(width))
    paths = [path for path, _ in _section(suffix)]
    for extra in ([], ["--ci"], ["--per-corruption"]):
        if extra == ["--per-corruption"] and suffix not in ("-corruptions", "-segmentation"):
            continue
        result = CliRunner().invoke(app, ["compare", *paths, *extra])
        assert result.exit_code == 0, result.output
        _assert_fits(result.stdout, width)
    if suffix == "-segmentation":  # the per-corruption table of a segmentation suite: mIoU
        assert "Corruption (mIoU %)" in result.stdout
    written = tmp_path / "table.md"
    assert CliRunner().invoke(app, ["compare", *paths, "-o", str(written)]).exit_code == 0
    cmp = build_comparison(_section(suffix))
    assert written.read_text() == str(COMPARE_FORMATS.get("markdown")(cmp, False)) + "\n"
