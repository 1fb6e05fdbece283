"""`robench.evaluate(model, suite, data, **options) -> Report`: `robench eval` from Python, on
one engine (`robench.evaluation.request.evaluate`), so the samples, records and numbers are the
CLI's. The caller's model is loaded by `load_model`'s `memory` source, its data converted by
`_data.py`, and left as it was (`_caller_state.py`).
"""

from __future__ import annotations

import inspect
import logging
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from torch import nn
from typing_extensions import Unpack

from robench._core.errors import ConfigError, DataError, as_input_errors
from robench._core.plugins import load_plugins
from robench.api._caller_state import preserved
from robench.api._data import as_engine_data, float_image_size, why_no_image_size
from robench.api._keywords import check_device_name, check_keyword_values, check_preprocessing
from robench.api._logging import prefixed_warnings
from robench.api._progress import make_progress
from robench.api._surrogate import SurrogateOptions, engine_surrogate
from robench.evaluation.checks.preflight import Preflight, check_names
from robench.evaluation.options import KEYWORDS, EvalOptions, EvalTarget
from robench.evaluation.options.request_options import check_keywords, request_from_options
from robench.evaluation.request import EvalRequest
from robench.evaluation.request import evaluate as run_request
from robench.evaluation.suites import LoadedSuite, load_suite, suite_from_data
from robench.models.loaded_model import LoadedModel
from robench.models.loading import load_model
from robench.models.sources.memory import given_spec
from robench.models.sources.registry import MemoryOptions
from robench.models.spec import ModelSpec
from robench.results.report.schema import Report
from robench.tasks import TASKS, load_task

logger = logging.getLogger(__name__)

# Stands for the model's task's smoke suite (`TaskEntry.smoke_suite`).
DEFAULT_SUITE = "smoke"
# Options of a model given by name; a model held in memory takes `preprocessing=` instead.
_NAMED_MODEL_ONLY = (
    "checkpoint",
    "ema",
    "num_classes",
    "mean",
    "std",
    "input_size",
    "interpolation",
    "crop_pct",
    "model_kwargs",
)


def option_names() -> list[str]:
    """Every keyword `evaluate` takes in **options: `robench eval`'s options (one table,
    `robench.evaluation.options.EVAL_OPTIONS`), by their Python names."""
    return [name for name in KEYWORDS if name not in EvalTarget.__annotations__]


def _own_keywords() -> list[str]:
    """evaluate's own keywords besides **options, for the close matches of a misspelt one."""
    parameters = inspect.signature(evaluate).parameters.values()
    return [p.name for p in parameters if p.kind is p.KEYWORD_ONLY]


def _check_suite_type(suite: Any) -> None:
    """suite= is a name, a path, a dict of a suite file's shape or a list of entries."""
    entries = isinstance(suite, Sequence) and not isinstance(suite, str | bytes)
    if isinstance(suite, str | Path | Mapping) or (
        entries and all(isinstance(entry, Mapping) for entry in suite)
    ):
        return
    raise ConfigError(
        f"suite={suite!r:.60} ({type(suite).__name__}) is not a suite; pass a shipped suite's name "
        '("smoke"), a suite .toml path, a dict of a suite file\'s shape, or a list of '
        '[[perturbations]] entries as dicts (e.g. [{"kind": "fgsm", "eps": "8/255"}]).'
    )


def _chosen_suite(suite: Any) -> LoadedSuite | None:
    """A suite file or name the caller chose, read once (None for the default, whose task
    follows the model's, and for entries built in Python, validated once the task is known)."""
    if isinstance(suite, str) and suite == DEFAULT_SUITE:
        return None
    return load_suite(str(suite)) if isinstance(suite, (str, Path)) else None


def _suite(suite: Any, chosen: LoadedSuite | None, task: str | None) -> str | LoadedSuite:
    """What the engine runs: the suite read already, the task's smoke suite for the default
    on another task's model, or entries built in Python validated as a TOML file is."""
    if chosen is not None:
        return chosen
    if isinstance(suite, str):
        return (TASKS.get(task).smoke_suite or suite) if task is not None else suite
    return suite_from_data(suite, task or "image-classification")


def _suite_task(suite: Any, chosen: LoadedSuite | None) -> str | None:
    """The task of a suite the caller chose (None for the default, whose task follows the
    model's): an image network that names none is evaluated on it, as by the CLI."""
    if chosen is not None:
        return chosen.suite.task
    if isinstance(suite, Mapping):
        return str(suite.get("task", "image-classification"))
    return None


def _refuse_other_models_options(
    loaded: LoadedModel | None, options: dict[str, Any], memory: MemoryOptions
) -> None:
    """Refuse what describes the other kind of model, which would be ignored: a model held in
    memory has its weights and says its preprocessing with `preprocessing=`; a model loaded
    by name takes its name and tokenizer or image processor from its source."""
    given = [name for name in _NAMED_MODEL_ONLY if options.get(name) not in (None, False)]
    if loaded is not None and given:
        raise ConfigError(
            f"{', '.join(given)} describe a model loaded by name, and this model is held in "
            "memory; give its normalisation and size as preprocessing=dict(mean=..., std=..., "
            "size=(C, H, W)) and drop them."
        )
    held = {
        "model_name": memory.name,
        "tokenizer": memory.tokenizer,
        "image_processor": memory.image_processor,
    }
    named = [name for name, value in held.items() if value is not None]
    if loaded is None and named:
        raise ConfigError(
            f"{', '.join(named)} describe a model held in memory, and this model is loaded by "
            "name, which gives its own; drop them (or pass the model object)."
        )


def _run(
    model: Any,
    suite: Any,
    data: Any,
    out: str | Path | None,
    model_options: MemoryOptions,
    surrogate_options: SurrogateOptions,
    progress: bool,
    options: dict[str, Any],
) -> Report:
    if "dry_run" in options:  # the command line's; a plan is not a Report (docs/cost.md)
        raise ConfigError(
            "dry_run is `robench eval --dry-run`'s option; robench.evaluate always runs and "
            "returns a Report. For the estimated passes from Python, call robench.evaluation."
            "planning.dry_run.plan_run(request) on an EvalRequest, or drop dry_run."
        )
    check_keywords(options, option_names(), also_suggest=_own_keywords())
    own = {"task": model_options.task, "model_name": model_options.name, "progress": progress}
    check_keyword_values(options, {**own, "surrogate_name": surrogate_options.name})
    _check_suite_type(suite)
    check_preprocessing(model_options.preprocessing)
    check_preprocessing(surrogate_options.preprocessing, "surrogate_preprocessing")
    if options.get("device") == "auto":  # the default: an object's own device, else cuda/cpu
        del options["device"]
    check_device_name(options.get("device"))  # before the model is moved there
    check_names(  # a wrong name or a missing file said before anything is loaded
        Preflight(
            model=model if isinstance(model, str) else None,
            checkpoint=options.get("checkpoint"),
            suite=suite if isinstance(suite, (str, Path)) else None,
            surrogate=options.get("surrogate"),
            surrogate_checkpoint=options.get("surrogate_checkpoint"),
            imports=tuple(options.get("imports") or ()),
            source_refusals=bool(options.get("ema")) or options.get("num_classes") is not None,
        )
    )
    if options.get("resume") and out is None:
        raise ConfigError(
            "resume=True continues the per-sample results of an earlier run saved with out=; "
            "pass the same out= (or drop resume=True)."
        )
    load_plugins(options.get("imports") or ())  # a plugin's task, before the model is wrapped
    engine_data = as_engine_data(data)
    model_options.data_size = float_image_size(engine_data)
    model_options.data_name = engine_data if isinstance(engine_data, str) else None
    chosen = _chosen_suite(suite)
    model_options.suite_task = _suite_task(suite, chosen)
    if engine_data is None:  # the task's built-in data, whose image size is known
        named = model_options.task or model_options.suite_task or "image-classification"
        model_options.data_name = load_task(named).default_data if named in TASKS else None
    try:  # a model object (the `memory` source); a name is loaded by the engine, as by the CLI
        loaded: LoadedModel | None = None
        if not isinstance(model, str) and model is not None:
            loaded = load_model(model, device=options.get("device"), memory=model_options)
    except ConfigError:  # "no input size" often means the data is not float images: say so
        reason = why_no_image_size(engine_data) if model_options.data_size is None else None
        if reason is None:
            raise
        raise DataError(reason) from None
    if loaded is not None and not options.get("device"):  # the device follows the model
        options["device"] = str(loaded.device)
    device = str(options.get("device") or "cpu")
    _refuse_other_models_options(loaded, options, model_options)
    options["surrogate"] = engine_surrogate(
        options.get("surrogate"), surrogate_options, model_options, device
    )
    spec = given_spec(model_options.preprocessing) if loaded is None else ModelSpec()
    with tempfile.TemporaryDirectory(prefix="robench-") as scratch:
        request = request_from_options(
            **options,
            suite=_suite(suite, chosen, loaded.task if loaded is not None else model_options.task),
            data=engine_data,
            out=Path(out) if out is not None else Path(scratch) / "report.json",
            model=model if isinstance(model, str) else None,
            overrides=spec,
            command=["robench.evaluate"],
        )
        return run_request(request, progress=make_progress(progress), model=loaded)


def _run_engine_request(request: EvalRequest, alone: bool, progress: bool) -> Report:
    """An `EvalRequest` (every option set in it; it writes its report to `request.out`)."""
    if not alone:
        raise ConfigError(
            "an EvalRequest holds the whole evaluation; pass it alone "
            "(robench.evaluate(request)) and set its options in it (dataclasses.replace)."
        )
    return run_request(request, progress=make_progress(progress))


@as_input_errors
def evaluate(
    model: str | nn.Module | EvalRequest,
    suite: str | Path | Mapping[str, Any] | Sequence[Mapping[str, Any]] = DEFAULT_SUITE,
    data: Any = None,
    *,
    task: str | None = None,
    model_name: str | None = None,
    preprocessing: Mapping[str, Any] | Any = None,
    tokenizer: Any = None,
    image_processor: Any = None,
    surrogate_name: str | None = None,
    surrogate_preprocessing: Mapping[str, Any] | Any = None,
    progress: bool = True,
    **options: Unpack[EvalOptions],
) -> Report:
    """Evaluate `model` on `suite` and `data`, as `robench eval` does, and return the report.

    model: a name or source string as `robench eval MODEL` takes it; an `nn.Module` held in
        memory (an image model taking pixels in [0, 1], a timm or transformers model, a robench
        word-level model); or an `EvalRequest`, alone. Its task is inferred as the CLI infers
        it; `task=` overrides.
    suite: a shipped suite's name, a TOML path, a dict of a suite file's shape or a list of
        `[[perturbations]]` entries; the default "smoke" is the model's task's smoke suite.
    data: a name or path as `--data` takes it (None: the task's built-in data), or data held
        in memory: a Dataset, a DataLoader, tensors `(x, y)`, texts, `{name: data}`.
    model_name, preprocessing, tokenizer, image_processor: what a model held in memory does
        not say itself (`preprocessing=dict(mean=..., std=..., size=(C, H, W))`, pixel units);
        surrogate_name, surrogate_preprocessing: the same of a surrogate held in memory.
    progress: a progress bar in a terminal or notebook (else log records); False: none.
    **options: `robench eval`'s options by their Python names (`option_names()`): out, limit,
        batch_size, seed, device (a model object's default: its own device), ...

    The caller's model is left as it was, also when the call raises. Bad input raises
    `robench.InputError` (a ValueError) with the sentence `robench eval` would print. Every
    keyword in full: docs/python-api.md, "robench.evaluate".
    """
    model_options = MemoryOptions(
        task=task,
        name=model_name,
        preprocessing=preprocessing,
        tokenizer=tokenizer,
        image_processor=image_processor,
        tasks=TASKS.get,
    )
    surrogate_options = SurrogateOptions(surrogate_name, surrogate_preprocessing)
    module = model if isinstance(model, nn.Module) else None
    surrogate = options.get("surrogate")
    surrogate_module = surrogate if isinstance(surrogate, nn.Module) else None
    with prefixed_warnings():  # `warning: ...` as the CLI prints it, when nobody logs
        if isinstance(model, EvalRequest):  # the engine's own form, as robench eval runs it
            alone = not options and data is None and suite == DEFAULT_SUITE
            alone = alone and model_options == MemoryOptions(tasks=TASKS.get)
            alone = alone and surrogate_options == SurrogateOptions()
            return _run_engine_request(model, alone, progress)
        with preserved(module), preserved(surrogate_module):
            given = {name: value for name, value in options.items() if name != "out"}
            out = options.get("out")
            return _run(model, suite, data, out, model_options, surrogate_options, progress, given)
