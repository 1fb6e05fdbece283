"""`robench eval`: evaluate one checkpoint under a suite of perturbations; its options are
the evaluation options' table (robench/cli/_eval_options.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer

from robench.cli._eval_options import eval_rows, python_values
from robench.cli._option_table import with_options
from robench.cli._output import err, handle_errors, out, table_width
from robench.cli._progress import make_progress
from robench.results.compare.tables import REPORT_FORMATS, markdown_fitting
from robench.results.report.schema import Report


def default_report_path(model: str | None, checkpoint: Path | None, suite: str) -> Path:
    # A source's name (hf:org/vit, local-dir:/models/x) keeps its last part, not the prefix.
    stem = Path(model.rsplit(":", 1)[-1]).stem if model else None
    stem = stem or (checkpoint.stem if checkpoint else "model")
    return Path("runs") / f"{stem}__{Path(suite).stem}.json"


@handle_errors
@with_options(*eval_rows())
def eval_command(**given: Any) -> None:
    """Evaluate one checkpoint under a suite; write a JSON report, print a table.

    Images reach every attack in pixel space ([0, 1]); normalisation is inside the model, so
    eps = 1/255 is one grey level. Per-sample results stream to REPORT.samples.jsonl, so an
    interrupted run continues with --resume.

    Examples:
      robench eval vit_nano_elliptical_fmnist --suite demo --limit 500
      robench eval -c runs/train/best.safetensors --suite smoke --limit 256
      robench eval vit_nano_elliptical_fmnist --suite smoke --target-halfwidth 0.05
      robench eval vit_nano_fmnist --suite malt --limit 1000 --dry-run
      robench eval resnet18 -c resnet18.pth --data /data/cifar10/test \\
          --mean 0.49,0.48,0.45 --std 0.25,0.24,0.26 --input-size 3,32,32 \\
          --num-classes 10
      robench eval deit_tiny_elliptical_patch16_224 -c deit.pth \\
          -s paper-adversarial --data /data/imagenet/val --device cuda
      robench eval resnet50 -c resnet50.pth -s imagenet-c --data /data/imagenet-c \\
          --device cuda --amp bf16 --channels-last -b 256
      torchrun --nproc_per_node=4 -m robench eval vit_nano_fmnist -s demo
      robench eval hf-hub:timm/resnet50.a1_in1k -s imagenet-c --data /data/imagenet-c
      robench eval local-dir:/models/resnet18 --data /data/val --limit 500
      robench eval hf:/models/vit-base --data /data/images --limit 500
      robench eval transformer_lm_nano_elliptical_pydocs -s text-smoke --limit 50
      robench eval -c lm.safetensors -s wikitext-wordswap --data /data/wikitext-103
    """
    options = python_values(given)
    _check_names_early(options)
    from robench.evaluation.interrupts import stop_cleanly
    from robench.evaluation.options.request_options import request_from_options
    from robench.evaluation.request import evaluate

    fmt = options.pop("format", None)
    dry_run = options.pop("dry_run", False)
    if "out" not in options:
        checkpoint = Path(options["checkpoint"]) if "checkpoint" in options else None
        suite = options.get("suite", "smoke")
        options["out"] = default_report_path(options.get("model"), checkpoint, suite)
    request = request_from_options(**options, command=["robench", *sys.argv[1:]])
    if dry_run:
        from robench.evaluation.planning.dry_run import plan_run
        from robench.evaluation.planning.plan_text import plan_text

        typer.echo(plan_text(plan_run(request)))
        return
    progress = make_progress()
    with stop_cleanly(request.command, request.out):  # SIGINT/SIGTERM: exit 130/143
        report = evaluate(request, progress=progress)
    progress.close()
    if os.environ.get("RANK", "0") != "0":  # under torchrun only rank 0 reports
        return
    _print_report(report, fmt)
    err.print(f"report written to {request.out}", highlight=False)
    from robench.evaluation.planning.throughput import record

    record(report)  # the run's passes per second on its device, for `--dry-run` (docs/cost.md)


def _check_names_early(options: dict[str, Any]) -> None:
    """A wrong name or a missing file answered in a fraction of a second, before torch loads."""
    from robench.evaluation.checks.preflight import Preflight, check_names

    check_names(
        Preflight(
            model=options.get("model"),
            checkpoint=options.get("checkpoint"),
            suite=options.get("suite", "smoke"),
            surrogate=options.get("surrogate"),
            surrogate_checkpoint=options.get("surrogate_checkpoint"),
            imports=tuple(options.get("imports") or ()),
            source_refusals=bool(options.get("ema")) or options.get("num_classes") is not None,
        )
    )


def _print_report(report: Report, fmt: str | None) -> None:
    """The report's table on stdout: `--format`, else rich on a terminal, else markdown."""
    name = fmt or ("rich" if out.is_terminal else "markdown")
    if name == "markdown" and (fmt is None or out.is_terminal):  # read there: fit its width
        rendered: object = markdown_fitting(report, table_width())
    else:
        rendered = REPORT_FORMATS.get(name)(report)
    if isinstance(rendered, str):
        typer.echo(rendered)
    else:
        out.print(rendered)
