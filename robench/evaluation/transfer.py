"""Transfer (black-box) attacks: adversarial images crafted on a surrogate, scored on the model.

What a transfer result is, records and refuses: docs/formats.md, "Transfer attacks"; how the
engine runs one: docs/architecture.md (`transfer.py`, and `runner.Job`'s `Surrogate`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import torch

from robench._core.errors import ConfigError, RobenchError, first_line
from robench.evaluation.jobs import missing_result
from robench.evaluation.options.applicability import applies_to_entry
from robench.evaluation.report_assembly import model_info
from robench.evaluation.runner import Job, Surrogate
from robench.evaluation.speed import SpeedOptions, prepare_model
from robench.evaluation.suites import LoadedSuite, SurrogateRef
from robench.models.loaded_model import LoadedModel
from robench.models.loading import load_model
from robench.results.report.schema import MissingResult
from robench.tasks import TASKS
from robench.tasks.finite_values import ALLOW_FLAG, non_finite_rows

logger = logging.getLogger(__name__)


class SurrogateChoice(Protocol):
    """The surrogate a request names (an `EvalRequest` is one)."""

    surrogate: str | LoadedModel | None
    surrogate_checkpoint: Path | None


class SurrogateLoading(SurrogateChoice, Protocol):
    """...and how its surrogates are loaded (`load_model`'s trust and weight options)."""

    ema: bool
    trust_checkpoint: bool
    trust_remote_code: bool
    allow_random_weights: bool
    allow_nonfinite: bool


def _given_surrogate(request: SurrogateChoice) -> SurrogateRef | None:
    """`--surrogate` (with `--surrogate-checkpoint`), or the model held in memory that
    `robench.evaluate(..., surrogate=module)` wrapped; None when none was given."""
    surrogate, checkpoint = request.surrogate, request.surrogate_checkpoint
    if isinstance(surrogate, LoadedModel):
        if checkpoint is not None:
            raise ConfigError(
                f"surrogate_checkpoint {checkpoint} was given for the surrogate "
                f"{surrogate.name}, which is held in memory with its own weights; drop "
                "surrogate_checkpoint (it gives the weights of a surrogate loaded by name)."
            )
        return SurrogateRef(surrogate.name, loaded=surrogate)
    if surrogate is None and checkpoint is not None:
        raise ConfigError(
            f"--surrogate-checkpoint {checkpoint} was given without --surrogate; name the "
            "surrogate model too (e.g. --surrogate vit_nano_fmnist)."
        )
    if surrogate is None:
        return None
    if not isinstance(surrogate, str):  # e.g. an nn.Module set in an EvalRequest by hand
        raise ConfigError(
            f"the surrogate is a {type(surrogate).__name__}; give a MODEL name as --surrogate "
            "takes it, or pass the module to robench.evaluate(model, suite, data, "
            "surrogate=module), which wraps it."
        )
    return SurrogateRef(surrogate, checkpoint)


def plan_transfer(request: SurrogateChoice, loaded_suite: LoadedSuite) -> LoadedSuite:
    """The suite with `--surrogate` (or an in-memory surrogate) given to every attack entry
    that names none; an entry that names one but is no attack (the option table's rule for
    --surrogate, options/applicability.py) is refused."""
    given = _given_surrogate(request)
    plan = []
    for planned in loaded_suite.plan:
        transferable = applies_to_entry("surrogate", planned)
        if planned.surrogate is not None and not transferable:
            raise ConfigError(
                f"suite entry {planned.label!r} ({planned.kind}) names a surrogate, but it "
                "is not an attack whose images another model can craft (it uses no model, or "
                "certifies the evaluated model itself); drop `surrogate` from it (only "
                "attacks transfer)."
            )
        if planned.surrogate is None and given is not None and transferable:
            planned = replace(planned, surrogate=given)
        plan.append(planned)
    return replace(loaded_suite, plan=tuple(plan))


def _load(request: SurrogateLoading, ref: SurrogateRef, device: torch.device) -> LoadedModel:
    if ref.loaded is not None:  # held in memory: wrapped on `device`, with its own weights
        return ref.loaded
    loaded = load_model(
        ref.model,
        checkpoint=ref.checkpoint,
        ema=request.ema,
        trust_checkpoint=request.trust_checkpoint,
        trust_remote_code=request.trust_remote_code,
        device=device,
    )
    if not loaded.has_weights and not request.allow_random_weights:
        raise ConfigError(
            f"surrogate {ref.describe()} has no checkpoint, so its weights are random and its "
            "attacks would mean nothing; give its weights (--surrogate-checkpoint, or "
            "`surrogate_checkpoint` in the suite entry), or --allow-random-weights."
        )
    return loaded


def _named(exc: RobenchError, message: str) -> RobenchError:
    """`exc` with `message`, of the same class (so the same exit code) where it can be."""
    try:
        return type(exc)(message)
    except TypeError:  # a subclass with another constructor
        return ConfigError(message)


def _check_input_size(surrogate: LoadedModel, target: LoadedModel, ref: SurrogateRef) -> None:
    mine, theirs = surrogate.preprocessing, target.preprocessing
    if mine is None or theirs is None or tuple(mine.input_size) == tuple(theirs.input_size):
        return
    raise ConfigError(
        f"surrogate {ref.describe()} takes inputs of size "
        f"{','.join(map(str, mine.input_size))} but {target.name} takes "
        f"{','.join(map(str, theirs.input_size))}; a transfer attack needs a surrogate with the "
        "evaluated model's input size, so pick one trained at that size."
    )


def _outputs(model: torch.nn.Module, inputs: torch.Tensor, what: str) -> torch.Tensor:
    try:
        with torch.inference_mode():
            found = model(inputs)
    except (AssertionError, RuntimeError, ValueError, IndexError, TypeError) as exc:
        raise ConfigError(
            f"{what} cannot run on the evaluated model's inputs of shape "
            f"{tuple(inputs.shape[1:])} ({first_line(exc)}); a transfer attack needs a "
            "surrogate that takes the evaluated model's inputs."
        ) from None
    if not isinstance(found, torch.Tensor) or found.dim() < 2:  # a module held in memory
        shown = tuple(found.shape) if isinstance(found, torch.Tensor) else type(found).__name__
        raise ConfigError(
            f"{what} returned {shown} for {len(inputs)} inputs, not logits (batch, classes); "
            "a transfer attack needs a surrogate whose forward returns the logits tensor."
        )
    return found


def _check_outputs(
    surrogate: torch.nn.Module,
    target: torch.nn.Module,
    inputs: torch.Tensor,
    ref: SurrogateRef,
    allow_nonfinite: bool = False,
) -> bool:
    """The surrogate must predict the evaluated model's classes (outputs of the same shape);
    returns whether it is randomized (two passes on the same inputs differ)."""
    few = inputs[:4]
    what = f"surrogate {ref.describe()}"
    first = _outputs(surrogate, few, what)
    if non_finite_rows(first) and not allow_nonfinite:
        raise ConfigError(
            f"{what} returns NaN or inf logits on the first batch (sample(s) "
            f"{', '.join(map(str, non_finite_rows(first)))}), so attacks crafted on it mean "
            f"nothing; check its weights, or pass {ALLOW_FLAG} to run them anyway."
        )
    expected = _outputs(target, few, "the evaluated model")
    if first.dim() != expected.dim():  # e.g. a module held in memory returning images
        raise ConfigError(
            f"{what} returns outputs of shape {tuple(first.shape[1:])} per input but the "
            f"evaluated model returns {tuple(expected.shape[1:])}; a transfer attack needs a "
            "surrogate that predicts the same classes, so pass one that returns its logits."
        )
    if first.shape[1:] != expected.shape[1:]:
        raise ConfigError(
            f"{what} predicts {first.shape[1]} classes but the evaluated model predicts "
            f"{expected.shape[1]}; a transfer attack needs a surrogate with the same classes "
            "in the same order, so pick one trained on the same data."
        )
    return not torch.equal(first, _outputs(surrogate, few, what))


def load_surrogates(
    request: SurrogateLoading,
    loaded_suite: LoadedSuite,
    target: LoadedModel,
    inputs: torch.Tensor,
    device: torch.device,
    speed: SpeedOptions,
) -> dict[SurrogateRef, Surrogate]:
    """Every surrogate of the plan, loaded, checked against the evaluated model on the first
    batch `inputs`, prepared for the run's speed modes, with its provenance for the report."""
    # The distinct surrogates of the plan, in the order entries first name them.
    refs = list(dict.fromkeys(p.surrogate for p in loaded_suite.plan if p.surrogate is not None))
    if not refs:
        return {}
    task = loaded_suite.suite.task
    if TASKS.get(task).inputs != "images":
        raise ConfigError(
            f"transfer attacks (a surrogate) apply to image tasks; this suite is for {task}, "
            "so drop --surrogate (and `surrogate` from the suite's entries)."
        )
    surrogates = {}
    for ref in refs:
        try:
            loaded = _load(request, ref, device)
        except RobenchError as exc:  # say which model failed: the loader's sentence may not
            if str(exc).startswith("surrogate "):
                raise
            raise _named(exc, f"surrogate {ref.describe()}: {exc}") from None
        _check_input_size(loaded, target, ref)
        randomized = _check_outputs(
            loaded.model, target.model, inputs, ref, request.allow_nonfinite
        )
        info = model_info(loaded, randomized).model_dump(mode="json")
        network = prepare_model(loaded.model, speed, inputs)
        surrogates[ref] = Surrogate(network, info, _same_model(loaded, target))
        logger.info("transfer: attacks of %s are crafted on %s", target.name, ref.describe())
    return surrogates


def _same_model(surrogate: LoadedModel, target: LoadedModel) -> bool:
    """Whether the surrogate is the evaluated model: same architecture, options and weights."""
    return (
        surrogate.weights_sha256 is not None
        and surrogate.weights_sha256 == target.weights_sha256
        and surrogate.architecture == target.architecture
        and surrogate.model_kwargs == target.model_kwargs
    )


def with_surrogates(
    jobs: Sequence[tuple[str, Job]], surrogates: Mapping[SurrogateRef, Surrogate]
) -> tuple[list[tuple[str, Job]], list[MissingResult]]:
    """Each transfer job given its loaded surrogate; a job whose surrogate is the evaluated
    model is listed as missing (it would be its white-box attack, run again)."""
    kept: list[tuple[str, Job]] = []
    missing: list[MissingResult] = []
    for key, job in jobs:
        ref = job.planned.surrogate
        if ref is None or not surrogates[ref].is_target:
            kept.append((key, job if ref is None else replace(job, surrogate=surrogates[ref])))
            continue
        reason = (
            f"its surrogate {ref.describe()} is the evaluated model (same architecture and "
            "weights), so it would be the white-box attack; the suite's white-box entry "
            "measures that."
        )
        logger.info("not evaluated: %s: %s", job.planned.label, reason)
        missing.append(missing_result(job.planned, key, reason))
    return kept, missing


def surrogate_fingerprint(surrogates: Mapping[SurrogateRef, Surrogate]) -> dict[str, Any]:
    """What the resume fingerprint adds for transfer runs: each surrogate's weights."""
    keys = ("architecture", "checkpoint_sha256", "source", "model_kwargs")
    return {ref.describe(): {k: s.info[k] for k in keys} for ref, s in surrogates.items()}


def surrogate_paths(
    request: SurrogateChoice, loaded_suite: LoadedSuite
) -> list[tuple[str, object]]:
    """What names the surrogates' files (checkpoints, model cards given as paths), by the
    flag or entry that names them, so that --out cannot overwrite one."""
    given: list[tuple[str, object]] = [
        ("--surrogate", request.surrogate),
        ("--surrogate-checkpoint", request.surrogate_checkpoint),
    ]
    for planned in loaded_suite.plan:
        if planned.surrogate is not None and planned.surrogate.loaded is None:
            given.append((f"the surrogate of {planned.label!r}", planned.surrogate.model))
            where = f"the surrogate checkpoint of {planned.label!r}"
            given.append((where, planned.surrogate.checkpoint))
    return given
