"""One demo section's evaluations: each role's model (baseline, elliptical) under the same
suite on the same built-in data, one report per role written as OUT_DIR/ROLE+SUFFIX.json."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from robench._core.progress import Progress
from robench.evaluation.request import EvalRequest, evaluate
from robench.results.report.schema import Report

logger = logging.getLogger(__name__)


def evaluate_roles(
    out_dir: Path,
    models: Mapping[str, str],
    *,
    suite: str,
    suffix: str,
    limit: int,
    batch_size: int,
    command: list[str],
    progress: Progress | None = None,
    unit: str = "samples",
    allow_random_weights: bool = False,
) -> list[tuple[Path, Report]]:
    """(report path, report) per role of `models` (role -> MODEL), in their order."""
    reports = []
    for role, model in models.items():
        path = out_dir / f"{role}{suffix}.json"
        logger.info("demo: evaluating %s (%s): suite %s on %d %s", role, model, suite, limit, unit)
        request = EvalRequest(
            suite=suite,
            data=None,  # the suite's task's built-in data
            out=path,
            model=model,
            limit=limit,
            batch_size=batch_size,
            overwrite=True,
            command=command,
            allow_random_weights=allow_random_weights,
        )
        reports.append((path, evaluate(request, progress=progress)))
    return reports
