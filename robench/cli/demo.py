"""`robench demo`: the whole tool on built-in data in a few minutes on a laptop CPU."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from robench.cli._output import err, handle_errors, out
from robench.cli._progress import make_progress

if TYPE_CHECKING:
    from robench.results.report.schema import Report


@handle_errors
def demo_command(
    quick: Annotated[
        bool, typer.Option("--quick", help="Under 30 seconds: fewer samples.")
    ] = False,
    out_dir: Annotated[
        Path, typer.Option("--out-dir", "-o", help="Where reports and figures go.")
    ] = Path("runs/demo"),
) -> None:
    """Baseline vs Elliptical nano models: attacks, corruptions and diagnostics on
    Fashion-MNIST, Word Swap perplexity on the Python docs, segmentation of built-in scenes,
    text classifiers under word attacks, figures.

    Evaluates the shipped checkpoints (models/) with the `demo` suite (`smoke` with --quick)
    and the `demo-corruptions` suite (`corruptions-smoke` with --quick), the nano language
    models with `demo-text` (`text-smoke` with --quick), the nano Segmenters with
    `demo-segmentation` (fewer scenes with --quick), the nano text classifiers with
    `demo-text-classification` (fewer texts with --quick), prints the
    paper-style comparison and a per-corruption table on stdout, writes reports, figures and
    one self-contained page of them all (index.html) to --out-dir, then lists the files it
    wrote. Progress goes to stderr.

    The committed copy in reports/demo/ is refreshed only on request: `make demo-reports` (or
    `--out-dir reports/demo`).

    Examples:
      robench demo
      robench demo --quick -o /tmp/demo
    """
    from robench.cli._demo import run_demo
    from robench.results.compare.formats import COMPARE_FORMATS
    from robench.results.compare.per_corruption import PER_CORRUPTION_FORMATS, build_per_corruption

    result = run_demo(out_dir, quick=quick, progress=make_progress())
    fmt = "rich" if out.is_terminal else "markdown"
    _print(COMPARE_FORMATS.get(fmt)(result.comparison, False))
    for note in result.comparison.notes:
        err.print(f"note: {note}", highlight=False)
    paths = [(str(path), report) for path, report in result.corruption_reports]
    per_corruption = build_per_corruption(paths)
    typer.echo("\nTop-1 (%) under corruptions, averaged over severities:")
    _print(PER_CORRUPTION_FORMATS.get(fmt)(per_corruption))
    _print_corruption_means(result.corruption_reports)
    typer.echo(
        "\nLanguage models on the Python-docs test split, clean and Word Swap 2.5% "
        "(perplexity and bits per byte, lower is better):"
    )
    _print(COMPARE_FORMATS.get(fmt)(result.text_comparison, False))
    if result.subword_comparison is not None:
        typer.echo(
            "\nA GPT-2 with its own byte-level BPE tokenizer (hf:models/gpt2_bpe_pydocs), whole "
            "test documents, clean and Word Swap 2.5% (bits per byte compare with the table above;"
            " perplexity counts BPE tokens, so it does not):"
        )
        _print(COMPARE_FORMATS.get(fmt)(result.subword_comparison, False))
    if result.segmentation is not None:
        typer.echo(
            "\nSegmentation: nano Segmenters on the built-in fashion scenes, clean, under "
            "corruptions and per-pixel PGD (mIoU and pixel accuracy, %):"
        )
        _print(COMPARE_FORMATS.get(fmt)(result.segmentation.comparison, False))
    if result.text_classification is not None:
        typer.echo(
            "\nText classification: nano classifiers on Python-docs paragraphs (8 parts of the "
            "docs), clean and under DeepWordBug and PWWS, 200 queries per sample (top-1 and "
            "attack success rate, %; queries per attacked sample):"
        )
        _print(COMPARE_FORMATS.get(fmt)(result.text_classification.comparison, False))
        for example in result.text_classification.examples:
            typer.echo(f"  a DeepWordBug success, {example}")
    _list_files(result.files, set(result.figures))


def _print_corruption_means(reports: list[tuple[Path, Report]]) -> None:
    """Each model's mean accuracy over the corruptions, with its paired-bootstrap interval."""
    for path, report in reports:
        for aggregate in report.aggregates:
            if aggregate.name == "mean_corruption_accuracy" and aggregate.value is not None:
                low, high = aggregate.ci95 or (aggregate.value, aggregate.value)
                typer.echo(
                    f"{report.model.name}: mean corruption accuracy {100 * aggregate.value:.1f}% "
                    f"(95% CI {100 * low:.1f}-{100 * high:.1f}, paired bootstrap) [{path.name}]"
                )


def _list_files(files: list[Path], figures: set[Path]) -> None:
    """What the demo wrote, on stderr (stdout carries the tables)."""
    err.print(f"wrote {len(files)} files:", highlight=False)
    for path in files:
        kind = "figure" if path in figures or path.suffix == ".png" else "file"
        err.print(f"  {kind}: {path}", highlight=False)


def _print(rendered: object) -> None:
    if isinstance(rendered, str):
        typer.echo(rendered)
    else:
        out.print(rendered)
