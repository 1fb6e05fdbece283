"""`robench demo`: the whole tool on built-in data in a few minutes on a laptop CPU."""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robench.cli._option_table import Opt, with_options
from robench.cli._output import err, handle_errors, out, table_width
from robench.cli._progress import make_progress

if TYPE_CHECKING:
    from rich.console import Console

    from robench.cli._demo import DemoResult
    from robench.results.compare.comparison import Comparison
    from robench.results.compare.per_corruption import PerCorruption


# `robench demo`'s options, one row each (robench/cli/_option_table.py).
DEMO_OPTIONS = (
    Opt("full", bool, False, "Every section, at full size (timings below)."),
    Opt("quick", bool, False, "Every section, on fewer samples."),
    Opt("out_dir", Path, Path("runs/demo"), "Where reports and figures go.", "-o"),
)


@handle_errors
@with_options(*DEMO_OPTIONS)
def demo_command(**given: Any) -> None:
    """A tour on the shipped nano models: baseline vs Elliptical nano ViT under attacks and
    corruptions, figures and a page; --full adds language models, segmentation, text
    classification and certified robustness.

    The tour evaluates the nano ViT pair on Fashion-MNIST under the `smoke` suite (clean, FGSM
    and PGD-5 at 8/255) on 200 images and `corruptions-smoke` (4 corruptions, one per group, at
    severities 1, 3, 5) on 100, draws their figures, writes one self-contained page of it all
    (index.html in --out-dir) and prints the attacks' comparison table on stdout.

    --full runs every section: the `demo` and `demo-corruptions` suites on 500 and 250
    images, the nano language models under Word Swap on the Python docs (`demo-text`), a
    GPT-2 with its own BPE tokenizer, the nano Segmenters on built-in scenes
    (`demo-segmentation`), the nano text classifiers under DeepWordBug and PWWS
    (`demo-text-classification`) and the noise-trained nano ViTs certified by randomized
    smoothing (`demo-certify`), with a per-corruption table. --quick runs every section on
    fewer samples (the tour's suites for the ViT pair).

    Measured on the 2-core machine (reports/benchmarks.md): the tour took 12-16.5 s wall and
    14-16 s of CPU time (user + system) at load 0.03-0.7 (idle, 2026-11-28), and 16-20 s
    wall at load 3.0-3.2 (shared with other sessions); --full took 120.5 s wall and 191 s of
    CPU time at load 0.7-1.6 (2026-11-26).

    Each phase's line on stderr says what is left and about how long it will take. Tables fit
    the terminal (piped: COLUMNS, else 120); the reports and the page keep every column. A
    section that needs an optional extra that is not installed (the subword model: hf; the
    text classifiers: text) is skipped with one line naming `pip install 'robench[EXTRA]'`;
    the rest runs and the exit code stays 0. The committed copy in reports/demo/ is
    refreshed only on request: `make demo-reports` (`--full --out-dir reports/demo`).

    Examples:
      robench demo
      robench demo --full
      robench demo --quick -o /tmp/demo
    """
    _sleeping_openmp_waits()
    from robench._core.errors import ConfigError
    from robench.cli._demo import run_demo
    from robench.results.report.schema import check_out_dir

    full, quick, out_dir = given["full"], given["quick"], given["out_dir"]
    if full and quick:
        raise ConfigError(
            "--full and --quick both run every section, at full size and on fewer samples; "
            "pass one of them (or neither, for the tour)."
        )
    check_out_dir(out_dir)
    progress = make_progress()
    result = run_demo(out_dir, mode="full" if full else "quick" if quick else "tour",
                      progress=progress)  # fmt: skip
    progress.close()
    DemoPrinter(out, table_width()).show(result)
    _list_files(out_dir, result.files, set(result.figures))


def _sleeping_openmp_waits() -> None:
    """OpenMP threads that wait by sleeping, unless the user chose (OMP_WAIT_POLICY): spinning
    waits at load 3-4 on 2 cores took the tour 25-45 s of CPU time and 30-48 s wall, sleeping
    14 s and 21 s (reports/benchmarks.md). The records are the same bit for bit (only how an
    idle thread waits changes). Read once when torch loads its OpenMP runtime."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _fill(text: str, width: int, indent: str = "") -> str:
    """`text` wrapped at spaces only: names and paths are never broken."""
    return textwrap.fill(
        text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )


@dataclass(frozen=True)
class DemoPrinter:
    """The demo's results on `console` (stdout), every line within `width` (the terminal's;
    when piped, COLUMNS or 120): rich tables on a terminal, markdown elsewhere, wide ones
    condensed (per corruption, averaged over severities; models as columns)."""

    console: Console
    width: int

    def echo(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)

    def text(self, message: str, indent: str = "") -> None:
        self.echo(_fill(message, self.width, indent))

    def heading(self, message: str) -> None:
        self.echo("")
        self.text(message)

    def comparison(self, comparison: Comparison) -> None:
        from robench.results.compare.formats import COMPARE_FORMATS, markdown_fitting

        for note in comparison.notes:
            err.print(f"note: {note}", highlight=False, soft_wrap=True)
        if self.console.is_terminal:
            self.console.print(COMPARE_FORMATS.get("rich")(comparison, False), width=self.width)
        else:
            self.echo(markdown_fitting(comparison, False, self.width))

    def per_corruption(self, table: PerCorruption) -> None:
        from robench.results.compare.per_corruption import (
            markdown_per_corruption_fitting,
            rich_per_corruption,
        )

        if self.console.is_terminal:
            self.console.print(rich_per_corruption(table), width=self.width)
        else:
            self.echo(markdown_per_corruption_fitting(table, self.width))

    def show(self, result: DemoResult) -> None:
        self.comparison(result.comparison)
        if result.text_comparison is None:  # the tour: one table, the rest on the page
            self._corruption_means(result)
            self.heading(
                "Every corruption, the figures and the tables side by side: index.html in the "
                "output folder. `robench demo --full` adds language models, segmentation, text "
                "classification and certified robustness."
            )
            return
        self._corruptions(result)
        self.heading(
            "Language models on the Python-docs test split, clean and Word Swap 2.5% "
            "(perplexity and bits per byte, lower is better):"
        )
        self.comparison(result.text_comparison)
        if "-subword" in result.skipped:
            self.heading(result.skipped["-subword"])
        elif result.subword_comparison is not None:
            self.heading(
                "A GPT-2 with its own byte-level BPE tokenizer (hf:models/gpt2_bpe_pydocs), "
                "whole test documents, clean and Word Swap 2.5% (bits per byte compare with the "
                "table above; perplexity counts BPE tokens, so it does not):"
            )
            self.comparison(result.subword_comparison)
        self._segmentation(result)
        self._text_classification(result)
        self._certification(result)

    def _corruptions(self, result: DemoResult) -> None:
        from robench.results.compare.per_corruption import build_per_corruption

        paths = [(str(path), report) for path, report in result.corruption_reports]
        self.heading("Top-1 (%) under corruptions, averaged over severities:")
        self.per_corruption(build_per_corruption(paths))
        self._corruption_means(result)

    def _corruption_means(self, result: DemoResult) -> None:
        """One line per model: the mean top-1 over every corruption and severity."""
        for path, report in result.corruption_reports:
            found = report.aggregate("mean_corruption_accuracy")
            if found is not None and found.value is not None:
                low, high = found.ci95 or (found.value, found.value)
                self.text(
                    f"{report.model.name}: mean corruption accuracy {100 * found.value:.1f}% "
                    f"(95% CI {100 * low:.1f}-{100 * high:.1f}, paired bootstrap) [{path.name}]"
                )

    def _segmentation(self, result: DemoResult) -> None:
        from robench.cli._demo.segmentation import SUFFIX, printed_tables

        if SUFFIX in result.skipped:
            self.heading(result.skipped[SUFFIX])
        if result.segmentation is None:
            return
        comparison, per_corruption = printed_tables(result.segmentation)
        self.heading(
            "Segmentation: nano Segmenters on the built-in fashion scenes, clean, under per-pixel "
            "PGD and the mean mIoU under corruptions (mIoU and pixel accuracy, %):"
        )
        self.comparison(comparison)
        self.heading("mIoU (%) under corruptions, averaged over severities:")
        self.per_corruption(per_corruption)

    def _text_classification(self, result: DemoResult) -> None:
        from robench.cli._demo.text_classification import SUFFIX

        if SUFFIX in result.skipped:
            self.heading(result.skipped[SUFFIX])
        if result.text_classification is None:
            return
        self.heading(
            "Text classification: nano classifiers on Python-docs paragraphs (8 parts of the "
            "docs), clean and under DeepWordBug and PWWS, 200 queries per sample (top-1 and "
            "attack success rate, %; queries per attacked sample):"
        )
        self.comparison(result.text_classification.comparison)
        for example in result.text_classification.examples:
            self.text(f"  a DeepWordBug success, {example}", indent="    ")

    def _certification(self, result: DemoResult) -> None:
        from robench.cli._demo import CERTIFIED_AT_ZERO

        if result.certification is None:
            return
        self.heading(
            "Certified robustness: the nano ViTs fine-tuned under Gaussian noise sigma 0.25, "
            "randomized smoothing (n 500, alpha 0.001): clean top-1 of the base classifier, "
            "certified accuracy at L2 radii 0-0.5 (a lower bound no attack can lower), average "
            "certified radius, abstentions (%). " + CERTIFIED_AT_ZERO
        )
        self.comparison(result.certification.comparison)


# A written file's kind in `_list_files`, by suffix (a figure may have another suffix).
_KINDS = {".html": "page", ".json": "reports", ".png": "figures"}  # in the listing's order


def _list_files(out_dir: Path, files: list[Path], figures: set[Path]) -> None:
    """What the demo wrote, on stderr, a line per kind of file."""
    kinds: dict[str, list[str]] = {}
    for path in files:
        name = str(path.relative_to(out_dir)) if path.is_relative_to(out_dir) else str(path)
        if path.name.endswith(".samples.jsonl"):
            continue  # beside its report, said once below
        kind = "figures" if path in figures else _KINDS.get(path.suffix, "other")
        kinds.setdefault(kind, []).append(name)
    # Wrapped to the terminal (piped: COLUMNS, else 120): the reports' line alone ran to 330
    # characters, one line that a terminal broke mid-name.
    width = err.width if err.is_terminal else table_width()
    err.print(f"wrote {len(files)} files in {out_dir}:", highlight=False, soft_wrap=True)
    samples = " (each with its .samples.jsonl)" if any(".samples." in p.name for p in files) else ""
    for kind in (*_KINDS.values(), "other"):
        if kind in kinds:
            tail = samples if kind == "reports" else ""
            line = f"  {kind}: {', '.join(kinds[kind])}{tail}"
            err.print(_fill(line, width, "    "), highlight=False, soft_wrap=True)
