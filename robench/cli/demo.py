"""`robench demo`: the whole tool on built-in data in a few minutes on a laptop CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from robench.cli._output import RichProgress, err, handle_errors, out
from robench.tables import REPORT_FORMATS


@handle_errors
def demo_command(
    quick: Annotated[
        bool, typer.Option("--quick", help="Under 30 seconds: fewer samples.")
    ] = False,
    out_dir: Annotated[Path, typer.Option("--out-dir", "-o", help="Where reports go.")] = Path(
        "reports/demo"
    ),
) -> None:
    """Baseline vs Elliptical nano ViT on Fashion-MNIST under adversarial attacks.

    Examples:
      robench demo
      robench demo --quick -o /tmp/demo
    """
    from robench.demo import run_demo

    for path, report in run_demo(out_dir, quick=quick, progress=RichProgress()):
        out.print(REPORT_FORMATS.get("rich")(report))
        err.print(f"report written to {path}", highlight=False)
