"""`robench gate --sequential`: evaluate a candidate model on a baseline report's suite and
samples, chunk by chunk, until the gate's verdict is settled (docs/ci.md, "Sequential gate").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from robench._core.errors import ConfigError
from robench._core.progress import Progress
from robench.evaluation.request import EvalRequest, evaluate
from robench.evaluation.suites import bundled_suites
from robench.results.gate.policy import Policy
from robench.results.gate.regression import GateResult
from robench.results.gate.sequential import SequentialGate
from robench.results.report.schema import DEFAULT_DATASET, Report


@dataclass(frozen=True)
class Candidate:
    """The model under test and where its report goes."""

    model: str | None
    checkpoint: Path | None
    out: Path
    device: str = "auto"
    workers: int | str = "auto"
    command: list[str] = field(default_factory=list)


def candidate_request(baseline: Report, candidate: Candidate) -> EvalRequest:
    """The evaluation of `candidate` on the baseline's suite and samples."""
    paths = {name: info.path for name, info in baseline.datasets.items()}
    default, suite = baseline.data, baseline.suite
    return EvalRequest(
        suite=suite.name if suite.name in bundled_suites() else suite.path,  # shipped: by name
        data=paths[DEFAULT_DATASET] if list(paths) == [DEFAULT_DATASET] else paths,
        out=candidate.out,
        model=candidate.model,
        checkpoint=candidate.checkpoint,
        split=default.split or "test",
        limit=default.limit,
        subset=default.subset,
        batch_size=baseline.batch_size,
        seed=baseline.seed,
        device=candidate.device,
        workers=candidate.workers,
        overwrite=True,
        command=candidate.command,
    )


def _check_same_samples(baseline: Report, candidate: Report) -> None:
    if candidate.suite.version != baseline.suite.version:
        raise ConfigError(
            f"cannot gate: the suite {baseline.suite.name!r} is at version "
            f"{candidate.suite.version} but the baseline used version {baseline.suite.version}; "
            "make a new baseline with this suite."
        )
    for name, info in baseline.datasets.items():
        found = candidate.datasets.get(name)
        if found is None or found.indices_sha256 != info.indices_sha256:
            raise ConfigError(
                f"cannot gate: the candidate drew other samples of dataset {name!r} than the "
                f"baseline ({info.path}, limit {info.limit}, seed {baseline.seed}); check that "
                "the baseline's data is at that path."
            )


def run_sequential_gate(
    baseline: Report,
    policy: Policy,
    candidate: Candidate,
    progress: Progress | None = None,
) -> GateResult:
    """Evaluate the candidate until the gate's verdict is settled; the gate's result."""
    rule = SequentialGate(baseline, policy)
    report = evaluate(candidate_request(baseline, candidate), progress, stop_rule=rule)
    _check_same_samples(baseline, report)
    return rule.result(report)
