"""`robench.evaluate(..., surrogate=module)`: a transfer attack's surrogate held in memory.

A MODEL string goes to the engine as it is; an `nn.Module` is loaded as the evaluated model
held in memory is (`load_model`'s `memory` source, `surrogate_preprocessing=` and
`surrogate_name=` as `preprocessing=` and `model_name=`). Its outputs are checked by the engine
against the evaluated model on the first batch (robench/evaluation/transfer.py), so a module
is refused with the same sentences as a surrogate given by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

from robench._core.errors import ConfigError, RobenchError
from robench.models.loaded_model import LoadedModel
from robench.models.loading import load_model
from robench.models.sources.registry import MemoryOptions
from robench.tasks import TASKS


@dataclass
class SurrogateOptions:
    """What `robench.evaluate` was told about a surrogate held in memory."""

    name: str | None = None  # surrogate_name=
    preprocessing: Any = None  # surrogate_preprocessing=: a dict, or a robench Preprocessing

    @property
    def given(self) -> list[str]:
        given = {"surrogate_name": self.name, "surrogate_preprocessing": self.preprocessing}
        return [keyword for keyword, value in given.items() if value is not None]


def engine_surrogate(
    surrogate: Any, options: SurrogateOptions, model_options: MemoryOptions, device: str
) -> str | LoadedModel | None:
    """`surrogate=` as the engine's request takes it: a name as it is, a module wrapped on
    the run's device at the data's size (`model_options`, filled in for the evaluated model)."""
    if surrogate is not None and not isinstance(surrogate, (str, nn.Module)):
        raise ConfigError(
            f"surrogate= is a {type(surrogate).__name__}; pass a model name (as --surrogate "
            "takes it) or a torch nn.Module image classifier (timm or your own)."
        )
    if not isinstance(surrogate, nn.Module):
        if options.given:
            what = "loaded by name, which gives its own" if surrogate else "not given"
            raise ConfigError(
                f"{', '.join(options.given)} describe a surrogate held in memory, and the "
                f"surrogate is {what}; drop them (or pass surrogate= an nn.Module)."
            )
        return surrogate
    suite_task = model_options.suite_task
    wrapping = MemoryOptions(
        name=options.name,
        preprocessing=options.preprocessing,
        keyword="surrogate_preprocessing",
        data_size=model_options.data_size,
        data_name=model_options.data_name,
        # An image suite's task; another task's suite is refused by the engine, which
        # says that transfer attacks apply to image tasks.
        suite_task=suite_task if suite_task and TASKS.get(suite_task).inputs == "images" else None,
        tasks=TASKS.get,
        check_outputs=False,  # checked against the evaluated model (evaluation/transfer.py)
    )
    try:
        return load_model(surrogate, device=device, memory=wrapping)
    except RobenchError as exc:  # say which model failed: the builder's sentence may not
        name = options.name or type(surrogate).__name__
        raise ConfigError(f"surrogate {name} (in memory): {exc}") from None
