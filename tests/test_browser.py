"""The page in a real browser: Debian's `chromium`, headless, loads it from a file:// URL.

Sorting: the page clicks the headers named in `#sort=ID[,ID...]` on load (a real click event
through the same handler a mouse click reaches); `--dump-dom` gives the DOM after the script
ran. Then a screenshot. Skipped where no Chromium is installed (`make data` installs it).
`ROBENCH_UPDATE_GOLDEN=1` also writes the demo page and its screenshot to reports/demo/
(index.html, index.png; the README links the screenshot).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from test_html_page import IMAGE_REPORTS, boards, parse_html
from typer.testing import CliRunner

from robench.cli import app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None, reason="no chromium on PATH: `sudo apt-get install chromium` (make data)"
    ),
]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
DEMO = IMAGE_REPORTS[0].parent


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, *args], capture_output=True, text=True, timeout=120, check=True
    )


def _page(tmp_path: Path) -> Path:
    path = tmp_path / "page.html"
    result = CliRunner().invoke(
        app, ["compare", *map(str, IMAGE_REPORTS), "--format", "html", "-o", str(path)]
    )
    assert result.exit_code == 0, result.stderr
    return path


def _rows_after(page: Path, clicks: list[str]) -> list[str]:
    url = page.resolve().as_uri() + "#sort=" + ",".join(clicks)
    dom = _chromium("--virtual-time-budget=5000", "--dump-dom", url).stdout
    (board,) = boards(parse_html(dom))
    return board.rows


def test_clicking_a_header_sorts_best_first_and_again_reverses(tmp_path: Path) -> None:
    page = _page(tmp_path)
    payload = json.loads(
        CliRunner().invoke(app, ["compare", *map(str, IMAGE_REPORTS), "-f", "json"]).stdout
    )
    initial = [row["model"] for row in payload["rows"]]
    assert _rows_after(page, []) == initial
    # A column where the last row is best, so that sorting best-first changes the order.
    values = {
        column: [row["cells"][column]["value"] for row in payload["rows"]]
        for column in payload["rows"][0]["cells"]
    }
    column = next(c for c, v in values.items() if v[-1] > max(v[:-1]))
    best_first = sorted(initial, key=lambda m: -values[column][initial.index(m)])
    assert best_first != initial
    assert _rows_after(page, [column]) == best_first  # higher is better: descending
    assert _rows_after(page, [column, column]) == best_first[::-1]
    assert _rows_after(page, ["model"]) == sorted(initial)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_screenshot_of_the_demo_page(tmp_path: Path) -> None:
    from robench.cli._demo import INDEX_TITLES, write_index
    from robench.cli._demo.certification import METRICS as CERTIFICATION_METRICS
    from robench.cli._demo.segmentation import METRICS as SEGMENTATION_METRICS
    from robench.cli._demo.text_classification import METRICS as CLASSIFICATION_METRICS
    from robench.results.compare.comparison import build_comparison
    from robench.results.report.schema import read_report

    update = bool(os.environ.get("ROBENCH_UPDATE_GOLDEN"))
    out = DEMO if update else tmp_path
    metrics = {
        "": ["top1"],
        "-corruptions": ["top1"],
        "-text": ["perplexity", "bits_per_byte"],
        "-subword": ["bits_per_byte", "perplexity"],
        "-segmentation": list(SEGMENTATION_METRICS),
        "-text-classification": list(CLASSIFICATION_METRICS),
        "-certify": list(CERTIFICATION_METRICS),
    }
    groups = []
    for suffix, title in INDEX_TITLES.items():
        paths = (
            [DEMO / "gpt2-bpe-text.json"]  # the subword model, a section of its own
            if suffix == "-subword"
            else [DEMO / f"{role}{suffix}.json" for role in ("baseline", "elliptical")]
        )
        if not all(path.exists() for path in paths):
            continue  # the demo's language-model reports may be absent
        reports = [(path, read_report(path)) for path in paths]
        named = [(str(path), report) for path, report in reports]
        groups.append((title, reports, build_comparison(named, metrics=metrics[suffix])))
    page = write_index(out, groups)
    shot = out / "index.png"
    _chromium("--window-size=1280,1000", f"--screenshot={shot}", page.resolve().as_uri())
    assert _png_size(shot) == (1280, 1000)
