"""`robench demo`: the whole tool on built-in data in a few minutes on a laptop CPU."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from robench.cli._output import err, handle_errors, out, table_width
from robench.cli._progress import make_progress

if TYPE_CHECKING:
    from rich.console import Console

    from robench.cli._demo import DemoResult
    from robench.results.compare.comparison import Comparison
    from robench.results.compare.per_corruption import PerCorruption


@handle_errors
def demo_command(
    quick: Annotated[
        bool, typer.Option("--quick", help="Fewer samples: about 35 seconds on 2 idle cores.")
    ] = False,
    out_dir: Annotated[
        Path, typer.Option("--out-dir", "-o", help="Where reports and figures go.")
    ] = Path("runs/demo"),
) -> None:
    """Baseline vs Elliptical nano models: attacks, corruptions and diagnostics on
    Fashion-MNIST, Word Swap perplexity on the Python docs, segmentation of built-in scenes,
    text classifiers under word attacks, certified radii by randomized smoothing, figures.

    Evaluates the shipped checkpoints (models/) with the `demo` suite (`smoke` with --quick)
    and the `demo-corruptions` suite (`corruptions-smoke` with --quick), the nano language
    models with `demo-text` (`text-smoke` with --quick), the nano Segmenters with
    `demo-segmentation` (fewer scenes with --quick), the nano text classifiers with
    `demo-text-classification` (fewer texts with --quick), the noise-trained nano ViTs with
    `demo-certify` (fewer images with --quick), prints the
    paper-style comparison and a per-corruption table on stdout, writes reports, figures and
    one self-contained page of them all (index.html) to --out-dir, then lists the files it
    wrote. Progress goes to stderr. Tables fit the terminal (piped: COLUMNS, else 120); the
    reports and the page keep every column.

    A section that needs an optional extra that is not installed (the subword model: hf; the
    text classifiers: text) is skipped with one line naming `pip install 'robench[EXTRA]'`;
    the rest runs and the exit code stays 0.

    The committed copy in reports/demo/ is refreshed only on request: `make demo-reports` (or
    `--out-dir reports/demo`).

    Examples:
      robench demo
      robench demo --quick -o /tmp/demo
    """
    from robench.cli._demo import run_demo

    progress = make_progress()
    result = run_demo(out_dir, quick=quick, progress=progress)
    progress.close()
    DemoPrinter(out, table_width()).show(result)
    _list_files(out_dir, result.files, set(result.figures))


@dataclass(frozen=True)
class DemoPrinter:
    """The demo's results on `console` (stdout), every line within `width` (the terminal's;
    when piped, COLUMNS or 120): rich tables on a terminal, markdown elsewhere, wide ones
    condensed (per corruption, averaged over severities; models as columns)."""

    console: Console
    width: int

    @property
    def rich(self) -> bool:
        return self.console.is_terminal

    def echo(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)

    def text(self, message: str, indent: str = "") -> None:
        self.echo(
            textwrap.fill(
                message,
                self.width,
                subsequent_indent=indent,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )

    def heading(self, message: str) -> None:
        self.echo("")
        self.text(message)

    def comparison(self, comparison: Comparison) -> None:
        from robench.results.compare.formats import COMPARE_FORMATS, markdown_fitting

        for note in comparison.notes:
            err.print(f"note: {note}", highlight=False, soft_wrap=True)
        if self.rich:
            self.console.print(COMPARE_FORMATS.get("rich")(comparison, False), width=self.width)
        else:
            self.echo(markdown_fitting(comparison, False, self.width))

    def per_corruption(self, table: PerCorruption) -> None:
        from robench.results.compare.per_corruption import (
            markdown_per_corruption_fitting,
            rich_per_corruption,
        )

        if self.rich:
            self.console.print(rich_per_corruption(table), width=self.width)
        else:
            self.echo(markdown_per_corruption_fitting(table, self.width))

    def show(self, result: DemoResult) -> None:
        self.comparison(result.comparison)
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
        if result.certification is None:
            return
        self.heading(
            "Certified robustness: the nano ViTs fine-tuned under Gaussian noise sigma 0.25, "
            "randomized smoothing (n 500, alpha 0.001): clean top-1 of the base classifier, "
            "certified accuracy at L2 radii 0-0.5 (a lower bound no attack can lower), average "
            "certified radius, abstentions (%):"
        )
        self.comparison(result.certification.comparison)


def _list_files(out_dir: Path, files: list[Path], figures: set[Path]) -> None:
    """What the demo wrote, on stderr, a line per kind: the page, figures, reports (each with
    its per-sample file), anything else."""
    kinds: dict[str, list[str]] = {}
    for path in files:
        name = str(path.relative_to(out_dir)) if path.is_relative_to(out_dir) else str(path)
        if path.name.endswith(".samples.jsonl"):
            continue  # beside its report, said once below
        kind = (
            "figures"
            if path in figures or path.suffix == ".png"
            else "reports"
            if path.suffix == ".json"
            else "page"
            if path.suffix == ".html"
            else "other"
        )
        kinds.setdefault(kind, []).append(name)
    err.print(f"wrote {len(files)} files in {out_dir}:", highlight=False, soft_wrap=True)
    samples = " (each with its .samples.jsonl)" if any(".samples." in p.name for p in files) else ""
    for kind in ("page", "reports", "figures", "other"):
        if kind in kinds:
            tail = samples if kind == "reports" else ""
            err.print(f"  {kind}: {', '.join(kinds[kind])}{tail}", highlight=False, soft_wrap=True)
