"""One demo section's evaluations: each role's model (baseline, elliptical) under the same
suite on the same built-in data, one report per role written as OUT_DIR/ROLE+SUFFIX.json."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from robench._core.progress import Progress
from robench.evaluation.request import EvalRequest, evaluate
from robench.models.spec import bundled_cards
from robench.results.compare.comparison import Comparison, build_comparison
from robench.results.report.schema import Report

logger = logging.getLogger(__name__)


def _log_start(line: str) -> None:
    logger.info("demo: %s", line)


def evaluate_roles(
    out_dir: Path,
    models: Mapping[str, str | tuple[str, Path | None]],
    *,
    suite: str,
    suffix: str,
    limit: int | None,
    batch_size: int,
    command: list[str],
    progress: Progress | None = None,
    unit: str = "samples",
    allow_random_weights: bool = False,
    start: Callable[[str], None] = _log_start,
) -> list[tuple[Path, Report]]:
    """(report path, report) per role of `models` (role -> MODEL or (MODEL, checkpoint)), in
    their order; `start` logs each evaluation's line (the demo's phase clock, or a log record)."""
    reports = []
    for role, given in models.items():
        model, checkpoint = (given, None) if isinstance(given, str) else given
        path = out_dir / f"{role}{suffix}.json"
        start(f"evaluating {role} ({model}): suite {suite} on {limit} {unit}")
        request = EvalRequest(
            suite=suite,
            data=None,  # the suite's task's built-in data
            out=path,
            model=model,
            checkpoint=checkpoint,
            limit=limit,
            batch_size=batch_size,
            overwrite=True,
            command=command,
            allow_random_weights=allow_random_weights,
        )
        reports.append((path, evaluate(request, progress=progress)))
    return reports


def compared(reports: list[tuple[Path, Report]], metrics: list[str]) -> Comparison:
    """The reports' comparison table, each row named by its report path."""
    return build_comparison([(str(path), report) for path, report in reports], metrics=metrics)


def cards_missing(models: Mapping[str, str], section: str) -> bool:
    """Whether a model card of `models` is not installed (a warning says the section is skipped)."""
    cards = bundled_cards()
    missing = [card for card in models.values() if card not in cards]
    if missing:
        logger.warning(
            "models/%s not installed: the %s section is skipped", ", ".join(missing), section
        )
    return bool(missing)
