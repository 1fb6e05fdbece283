"""The HTML page of `robench compare --format html`: the same numbers and marks as the json
format, directions, no external reference, accessible markup, parts present only when they
apply (gate, figures), for the shipped demo reports and a language-model comparison."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_factory import make_report, write
from typer.testing import CliRunner

from robench.cli import app

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "reports" / "demo"
IMAGE_REPORTS = [DEMO / "baseline.json", DEMO / "elliptical.json"]
CORRUPTION_REPORTS = [DEMO / "baseline-corruptions.json", DEMO / "elliptical-corruptions.json"]
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}


# --- a small DOM from html.parser -------------------------------------------------------------


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self, tag: str | None = None) -> list[Element]:
        found = [self] if tag is None or self.tag == tag else []
        for child in self.children:
            if isinstance(child, Element):
                found += child.iter(tag)
        return found

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_html(text: str) -> Element:
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.root


@dataclass
class Board:
    """A leaderboard as the page shows it."""

    ids: list[str]  # column ids (data-sort-id), without the model column
    arrows: list[str]
    rows: list[str]  # model labels in order
    values: dict[tuple[str, str], str]  # (model, column id) -> shown text
    keys: dict[tuple[str, str], float]  # (model, column id) -> data-sort
    marks: dict[tuple[str, str], str]  # "best" (<strong>), "second" (<u>) or ""


def boards(root: Element) -> list[Board]:
    found = []
    for table in root.iter("table"):
        if "leaderboard" not in table.classes():
            continue
        heads = table.iter("thead")[0].iter("th")
        ids = [h.iter("button")[0].attrs["data-sort-id"] for h in heads[1:]]
        arrows = [
            next(s for s in h.iter("span") if "arrow" in s.classes()).text() for h in heads[1:]
        ]
        board = Board(ids, arrows, [], {}, {}, {})
        for tr in table.iter("tbody")[0].iter("tr"):
            label = tr.iter("th")[0].attrs["data-sort"]
            board.rows.append(label)
            for column, td in zip(ids, tr.iter("td"), strict=True):
                value = next(e for e in td.iter() if "value" in e.classes())
                mark = {"strong": "best", "u": "second"}.get(value.tag, "")
                board.values[label, column] = value.text().strip()
                board.keys[label, column] = float(td.attrs["data-sort"])
                board.marks[label, column] = mark
        found.append(board)
    return found


# --- fixtures ----------------------------------------------------------------------------------


def _compare(*args: str | Path) -> str:
    result = CliRunner().invoke(app, ["compare", *map(str, args)])
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def gate_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The gate's checks of elliptical (candidate) against baseline, as JSON."""
    path = tmp_path_factory.mktemp("gate") / "gate.json"
    result = CliRunner().invoke(
        app, ["gate", "-b", *map(str, [IMAGE_REPORTS[0], "-c", IMAGE_REPORTS[1], "--json", path])]
    )
    assert result.exit_code in (0, 1), result.stderr
    return path


@pytest.fixture(scope="session")
def text_reports(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Language-model reports: the demo's when present, else two quick text-smoke runs."""
    shipped = [DEMO / "baseline-text.json", DEMO / "elliptical-text.json"]
    if all(path.exists() for path in shipped):
        return shipped
    out = tmp_path_factory.mktemp("text")
    paths = []
    for role, card in (
        ("baseline", "transformer_lm_nano_pydocs"),
        ("elliptical", "transformer_lm_nano_elliptical_pydocs"),
    ):
        path = out / f"{role}-text.json"
        args = ["eval", card, "-s", "text-smoke", "--limit", "20", "-o", str(path)]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.stderr
        paths.append(path)
    return paths


# --- the page ----------------------------------------------------------------------------------


def _check_board_matches_json(board: Board, payload: dict) -> None:
    columns = {f"{c['perturbation']}/{c['metric']}": c for c in payload["columns"]}
    assert board.ids == [
        c["perturbation"] if c["aggregate"] else f"{c['perturbation']}/{c['metric']}"
        for c in payload["columns"]
    ]
    assert board.rows == [row["model"] for row in payload["rows"]]
    for column, arrow in zip(board.ids, board.arrows, strict=True):
        higher = columns[column]["higher_is_better"] if column in columns else None
        if higher is not None:
            assert arrow == ("↑" if higher else "↓")
    for row in payload["rows"]:
        for column, cell in row["cells"].items():
            key = (row["model"], column)
            if cell["value"] is None:  # a cost the (schema 4) report did not count
                assert board.values[key] == "unknown" and not board.marks[key]
                continue
            assert board.keys[key] == cell["value"]
            assert board.values[key] == f"{cell['value']:.2f}"
            assert board.marks[key] == (cell["mark"] or "")


def test_page_of_the_demo_reports_shows_the_json_numbers_and_marks(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    _compare(*IMAGE_REPORTS, "--format", "html", "-o", page)
    # The page always shows the cost column (json with --cost).
    payload = json.loads(_compare(*IMAGE_REPORTS, "--format", "json", "--cost"))
    root = parse_html(page.read_text(encoding="utf-8"))
    (board,) = boards(root)
    _check_board_matches_json(board, payload)
    assert set(board.rows) == {"vit_nano_fmnist", "vit_nano_elliptical_fmnist"}
    assert len(board.ids) == 24  # 8 results (demo suite v2) x top1, top5, passes per sample
    assert set(board.marks.values()) == {"best", ""}  # two models: no second best
    # Each column's best is the larger value (every column is an accuracy, higher is better).
    for column in board.ids:
        values = {row: board.keys[row, column] for row in board.rows}
        best = [row for row in board.rows if board.marks[row, column] == "best"]
        if len(set(values.values())) > 1:
            assert best == [max(values, key=values.__getitem__)]
    accuracies = [i for i, c in enumerate(board.ids) if not c.endswith("/passes_per_sample")]
    assert {board.arrows[i] for i in accuracies} == {"↑"}
    assert {a for i, a in enumerate(board.arrows) if i not in accuracies} == {"↓"}  # cost


def test_page_with_three_models_underlines_the_second_best(tmp_path: Path) -> None:
    accuracies = {"a": (0.8, 0.3), "b": (0.7, 0.5), "c": (0.6, 0.4)}  # clean, fgsm
    reports = [
        write(make_report(name, {"clean": clean, "fgsm": fgsm}, n=200), tmp_path / f"{name}.json")
        for name, (clean, fgsm) in accuracies.items()
    ]
    page = _compare(*reports, "--format", "html", "--metric", "top1")
    payload = json.loads(_compare(*reports, "--format", "json", "--metric", "top1", "--cost"))
    (board,) = boards(parse_html(page))
    _check_board_matches_json(board, payload)
    assert board.marks["a", "clean/top1"] == "best"
    assert board.marks["b", "clean/top1"] == "second"
    assert board.marks["b", "fgsm/top1"] == "best"
    assert board.marks["c", "fgsm/top1"] == "second"
    assert board.marks["c", "clean/top1"] == board.marks["a", "fgsm/top1"] == ""
    assert board.values["a", "clean/top1"] == "80.00"


def test_page_is_self_contained(tmp_path: Path) -> None:
    text = _compare(*CORRUPTION_REPORTS, "--format", "html", "--metric", "top1")
    root = parse_html(text)
    for element in root.iter():
        for name in ("src", "href", "srcset", "action", "poster", "data"):
            value = element.attrs.get(name)
            if value is not None:
                assert value.startswith(("data:", "#")), (element.tag, name, value[:60])
    styles = " ".join(style.text() for style in root.iter("style"))
    assert "@import" not in styles
    assert not re.search(r"url\(\s*['\"]?(?!data:)", styles)
    assert not root.iter("link")
    for script in root.iter("script"):
        assert "src" not in script.attrs
        assert "http" not in script.text() and "fetch(" not in script.text()
    assert not re.search(r"https?://", text)


def test_page_markup_is_accessible_and_parts_apply(tmp_path: Path) -> None:
    root = parse_html(_compare(*CORRUPTION_REPORTS, "--format", "html", "--metric", "top1"))
    (table,) = [t for t in root.iter("table") if "leaderboard" in t.classes()]
    assert table.iter("caption")
    assert all(th.attrs.get("scope") == "col" for th in table.iter("thead")[0].iter("th"))
    assert all(th.attrs.get("scope") == "row" for th in table.iter("tbody")[0].iter("th"))
    images = root.iter("img")
    assert images and all(len(img.attrs.get("alt", "")) > 20 for img in images)
    captions = [f.iter("figcaption")[0].text() for f in root.iter("figure")]
    # Corruptions: the heatmap; no attack budgets, no perplexity, no gate.
    assert captions == ["Accuracy per corruption and severity"]
    ids = {e.attrs.get("id") for e in root.iter()}
    assert "gate" not in ids and "provenance" in ids
    details = root.iter("details")
    assert len(details) == 2
    facts = details[0].text()
    assert "e1f82172dbbf9ebcb3cd80e855b0134a7889e156193d96de1017e3a7ea808d75" in facts
    assert "Seed" in facts and "Wall time" in facts and "torch" in facts
    assert any("print" in style.text() for style in root.iter("style"))


def test_image_page_has_the_budget_curve_and_no_heatmap() -> None:
    root = parse_html(_compare(*IMAGE_REPORTS, "--format", "html"))
    captions = [f.iter("figcaption")[0].text() for f in root.iter("figure")]
    # The demo's PGD results keep each sample's first successful iteration (issue 28).
    assert captions == ["Accuracy against the L∞ budget", "Accuracy against attack iterations"]
    assert root.iter("h1")[0].text() == "robench compare: demo v2"
    header = root.iter("header")[0].text()
    assert "demo v2" in header and "500 of 10,000 samples" in header
    assert "robench 0.1.0" in header and "2026-" in header


def test_gate_section_shows_every_check_status(gate_file: Path) -> None:
    root = parse_html(_compare(*IMAGE_REPORTS, "--format", "html", "--gate", gate_file))
    summary = json.loads(gate_file.read_text())
    (section,) = [e for e in root.iter("section") if e.attrs.get("id") == "gate"]
    (table,) = section.iter("table")
    rows = table.iter("tbody")[0].iter("tr")
    shown = {tr.iter("th")[0].text(): tr.iter("td")[-1].text().strip() for tr in rows}
    assert shown == {check["name"]: check["status"] for check in summary["checks"]}
    assert len(shown) == 16  # 8 results x top1, top5
    assert summary["status"] in section.iter("h2")[0].text()


def test_gate_json_has_every_check_and_the_exit_code(tmp_path: Path) -> None:
    """Reversed roles (baseline as the candidate): the file has every check, its verdict and
    the exit code the command returned."""
    path = tmp_path / "gate.json"
    result = CliRunner().invoke(
        app,
        ["gate", "-b", str(IMAGE_REPORTS[1]), "-c", str(IMAGE_REPORTS[0]), "--json", str(path)],
    )
    summary = json.loads(path.read_text())
    assert result.exit_code == summary["exit_code"]
    assert summary["robench_gate"] == 1
    assert sum(summary["counts"].values()) == len(summary["checks"]) == 16
    assert {c["status"] for c in summary["checks"]} <= {"pass", "inconclusive", "regressed"}
    assert summary["checks"][0]["shown"]["Check"] == "clean/top1"


def test_gate_file_must_be_a_gate_summary(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["compare", *map(str, IMAGE_REPORTS), "-f", "html", "--gate", str(IMAGE_REPORTS[0])]
    )
    assert result.exit_code == 2
    assert "robench gate ... --json" in result.stderr
    result = CliRunner().invoke(app, ["compare", *map(str, IMAGE_REPORTS), "--gate", "x.json"])
    assert result.exit_code == 2
    assert "--format html" in result.stderr


def test_html_without_output_goes_to_stdout_and_output_suffix_picks_html(tmp_path: Path) -> None:
    stdout = _compare(*IMAGE_REPORTS, "--format", "html")
    assert stdout.startswith("<!DOCTYPE html>") and stdout.rstrip().endswith("</html>")
    page = tmp_path / "sub" / "page.html"
    result = CliRunner().invoke(app, ["compare", *map(str, IMAGE_REPORTS), "-o", str(page)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.slow
def test_language_model_page_bolds_the_lower_perplexity(text_reports: list[Path]) -> None:
    page = _compare(*text_reports, "--format", "html")
    payload = json.loads(_compare(*text_reports, "--format", "json", "--cost"))
    root = parse_html(page)
    (board,) = boards(root)
    _check_board_matches_json(board, payload)
    column = "clean/perplexity"
    assert board.arrows[board.ids.index(column)] == "↓"
    values = {row: board.keys[row, column] for row in board.rows}
    best = min(values, key=values.__getitem__)
    assert board.marks[best, column] == "best"
    captions = [f.iter("figcaption")[0].text() for f in root.iter("figure")]
    assert captions == ["Perplexity, clean vs Word Swap"]
