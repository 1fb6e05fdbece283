"""`robench demo`: the whole tool on built-in data in a few minutes on a laptop CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from robench.cli._output import err, handle_errors, make_progress, out


@handle_errors
def demo_command(
    quick: Annotated[
        bool, typer.Option("--quick", help="Under 30 seconds: fewer samples.")
    ] = False,
    out_dir: Annotated[
        Path, typer.Option("--out-dir", "-o", help="Where reports and figures go.")
    ] = Path("runs/demo"),
) -> None:
    """Baseline vs Elliptical nano ViT on Fashion-MNIST: attacks, diagnostics, figures.

    Evaluates the shipped checkpoints (models/) with the `demo` suite (`smoke` with --quick),
    prints the paper-style comparison on stdout and writes reports and figures to --out-dir,
    then lists the files it wrote. Progress goes to stderr.

    The committed copy in reports/demo/ is refreshed only on request: `make demo-reports` (or
    `--out-dir reports/demo`).

    Examples:
      robench demo
      robench demo --quick -o /tmp/demo
    """
    from robench.cli._demo import run_demo
    from robench.results.compare_formats import COMPARE_FORMATS

    result = run_demo(out_dir, quick=quick, progress=make_progress())
    fmt = "rich" if out.is_terminal else "markdown"
    rendered = COMPARE_FORMATS.get(fmt)(result.comparison, False)
    if isinstance(rendered, str):
        typer.echo(rendered)
    else:
        out.print(rendered)
    for note in result.comparison.notes:
        err.print(f"note: {note}", highlight=False)
    figures = set(result.figures)
    err.print(f"wrote {len(result.files)} files:", highlight=False)
    for path in result.files:
        kind = "figure" if path in figures or path.suffix == ".png" else "file"
        err.print(f"  {kind}: {path}", highlight=False)
