"""Model sources: where MODEL comes from, in one ordered table (`SOURCES`, no if/elif chain),
asked stage by stage (`STAGES`; docs/architecture.md, "Model sources"; a package's own source:
docs/models.md, "Adding a source"). Builders are registered by dotted path, which keeps this
module free of torch, so listing the sources stays instant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robench._core.errors import ConfigError, PluginError
from robench._core.extras import missing_extra
from robench._core.lazy import LazyEntry, import_object
from robench._core.plugins import (
    SOURCE_ENTRY_POINT_GROUP,
    call_plugin,
    declared_entry_points,
    defined_in,
)
from robench._core.registry import Registry

if TYPE_CHECKING:
    from robench.models.loaded_model import LoadedModel
    from robench.models.spec import ModelSpec

_SEPARATOR = ":"
# The order in which `load_model` asks the sources (see the module docstring).
STAGES = ("object", "prefix", "claim", "name")


@dataclass
class MemoryOptions:
    """What the caller said about a model object held in memory besides the object itself
    (`robench.evaluate`'s keywords, and what it knows of the run)."""

    task: str | None = None  # task=
    name: str | None = None  # model_name=
    preprocessing: Any = None  # preprocessing=: a dict, or a robench Preprocessing
    tokenizer: Any = None
    image_processor: Any = None
    data_size: tuple[int, int, int] | None = None  # the in-memory data's image size, if float
    data_name: str | None = None  # the data's name or path, for the built-in data's sizes
    suite_task: str | None = None  # the task of a suite the caller chose (not the default)
    # The keyword that gave `preprocessing`, as errors and config_sources name it.
    keyword: str = "preprocessing"
    # A task's registration by name (`robench.tasks.TASKS.get`): what its models read and
    # return. The models layer cannot import the tasks, so the caller hands the lookup down.
    tasks: Callable[[str], Any] | None = None
    # One forward pass on blank inputs checks the outputs; a transfer attack's surrogate is
    # checked against the evaluated model instead (evaluation/transfer.py).
    check_outputs: bool = True


@dataclass(frozen=True)
class SourceRequest:
    """What a source builder gets: MODEL, the target its stage took, and the user's options."""

    name: str  # MODEL as given, prefix included ("" for an object or no name)
    target: Any  # what follows `PREFIX:` (a folder, ORG/NAME[@REV]), a tagged timm name, a name
    overrides: ModelSpec | None = None  # --mean/--std/--input-size/... over the model's own
    trust_remote_code: bool = False  # transformers code shipped with a model (auto_map)
    trust_checkpoint: bool = False  # unpickling arbitrary objects from .bin/.pth weights
    device: Any = "cpu"  # None (the memory source only): the model object's own
    options: dict[str, Any] = field(default_factory=dict)
    checkpoint: Path | None = None  # --checkpoint (the `named` source's)
    ema: bool = False  # --ema (the `named` source's)
    model: Any = None  # the object held in memory (the `memory` source's)
    memory: MemoryOptions = field(default_factory=MemoryOptions)


@dataclass(frozen=True)
class LazySource(LazyEntry):
    """A registered source: its prefix (`name`), its builder ("package.module:function",
    imported by `load()`) and a one-line description."""

    description: str
    example: str = ""
    # A source without a prefix of its own: "package.module:predicate", called with MODEL when
    # no checkpoint is given, says whether the source takes the name (timm's pretrained tags).
    claims: str = ""
    # How errors name where the weights come from ("its hf source" by default).
    weights_from: str = ""
    # Modules of optional extras its builder imports (robench/_core/extras.py): checked
    # before anything is loaded.
    modules: tuple[str, ...] = ()
    # "object" or "name" for the two sources that take what no other does (`STAGES`); a
    # source with `claims` is a "claim", any other a "prefix".
    takes: str = ""

    @property
    def prefix(self) -> str:
        return self.name

    @property
    def stage(self) -> str:
        return self.takes or ("claim" if self.claims else "prefix")

    @property
    def where(self) -> str:
        return self.weights_from or f"its {self.prefix} source"

    def missing_extra(self, name: str) -> ConfigError | None:
        """The one-sentence error when a module this source needs is not installed."""
        return missing_extra({m: f"model {name} (the {self.prefix} source)" for m in self.modules})

    def build(self, request: SourceRequest) -> LoadedModel:
        """The model the builder makes of `request` (imports the builder's module), after
        checking that the optional extras it needs are installed."""
        from robench.models.loaded_model import LoadedModel

        error = self.missing_extra(request.name)
        if error is not None:
            raise error
        builder = self.load()
        if str(getattr(builder, "__module__", "")).startswith("robench."):
            built = builder(request)  # robench's own: its errors are the model's, not a plugin's
        else:
            built = call_plugin(f"model source {self.prefix!r}", builder, request)
        if not isinstance(built, LoadedModel):
            raise PluginError(
                f"model source {self.prefix!r} ({defined_in(builder)}) returned a "
                f"{type(built).__name__}, not a LoadedModel; its builder must return one "
                "(docs/extending.md, A model source)."
            )
        return built

    def claim(self, name: str) -> bool:
        return bool(import_object(self.claims)(name))


SOURCES: Registry[LazySource] = Registry("model source")


def register_source(
    prefix: str,
    builder: str,
    description: str,
    example: str = "",
    *,
    claims: str = "",
    weights_from: str = "",
    modules: tuple[str, ...] = (),
    takes: str = "",
) -> None:
    """Add a source; `builder` is "package.module:function", imported when first used (the
    other fields: `LazySource`'s)."""
    source = LazySource(prefix, builder, description, example, claims, weights_from, modules, takes)
    SOURCES.register(prefix)(source)


register_source(
    "memory",
    "robench.models.sources.memory:from_memory",
    "a model object held in memory (robench.evaluate): an nn.Module, timm or transformers model",
    takes="object",
)
register_source(
    "hf-hub",
    "robench.models.sources.timm_models:from_hub",
    "a timm model from the local Hugging Face cache (config.json + weights), pretrained=True",
    "hf-hub:timm/resnet50.a1_in1k",
)
register_source(
    "local-dir",
    "robench.models.sources.timm_models:from_local_dir",
    "a timm model from a folder timm saved (config.json + model.safetensors)",
    "local-dir:/models/resnet18",
)
register_source(
    "hf",
    "robench.models.sources.hf_source:from_transformers",
    "a transformers model (image classifier or causal LM) from a folder or the local cache",
    "hf:google/vit-base-patch16-224",
    modules=("transformers",),
)
register_source(
    "timm-pretrained-tag",
    "robench.models.sources.timm_models:from_pretrained_tag",
    "a timm pretrained tag (ARCH.TAG) from the local Hugging Face cache, without --checkpoint",
    "resnet50.a1_in1k",
    claims="robench.models.sources.timm_models:is_pretrained_tag",
    weights_from="timm's pretrained weights",
)
register_source(
    "named",
    "robench.models.loading:from_name",
    "robench's zoo, a timm architecture, a model card, or a checkpoint's metadata",
    takes="name",
)


def load_source_entry_points() -> list[str]:
    """Register every installed package's sources (`robench.sources` entry points): each
    entry point's name is the prefix and its value the builder, imported on first use."""
    added = []
    for entry in declared_entry_points(SOURCE_ENTRY_POINT_GROUP):
        if entry.name in SOURCES:
            continue
        SOURCES.register(entry.name)(LazySource(entry.name, entry.target, f"from {entry.target}"))
        added.append(entry.name)
    return added


def split_source(name: str | None) -> tuple[LazySource, str] | None:
    """The source a MODEL name asks for and its target, or None for a plain name.

    Only a registered prefix counts, so a card path with a colon (`C:/cards/x.toml`) or a
    robench name still loads as before.
    """
    if not name or _SEPARATOR not in name:
        return None
    prefix, _, target = name.partition(_SEPARATOR)
    if prefix not in SOURCES or SOURCES.get(prefix).stage != "prefix":
        return None
    if not target:
        source = SOURCES.get(prefix)
        raise ConfigError(
            f"model {name!r} names the {prefix} source but nothing after the colon; give it "
            f"like {source.example or prefix + ':TARGET'}."
        )
    return SOURCES.get(prefix), target


def claiming_source(name: str | None) -> LazySource | None:
    """The prefix-less source that takes MODEL (a timm pretrained tag), or None."""
    if not name:
        return None
    for source in in_stage("claim"):
        if source.claim(name):
            return source
    return None


def in_stage(stage: str) -> list[LazySource]:
    """The sources of one stage of the table, by name."""
    return [SOURCES.get(p) for p in SOURCES.names() if SOURCES.get(p).stage == stage]


def _take_prefixed(model: Any, checkpoint: bool) -> tuple[LazySource, Any] | None:
    return split_source(model) if isinstance(model, str) else None


def _take_claimed(model: Any, checkpoint: bool) -> tuple[LazySource, Any] | None:
    claimed = claiming_source(model) if isinstance(model, str) and not checkpoint else None
    return (claimed, model) if claimed is not None else None


# stage -> which source of it takes MODEL (given whether a checkpoint was given), and what.
_TAKES: dict[str, Callable[[Any, bool], tuple[LazySource, Any] | None]] = {
    "object": lambda model, _: (
        None if model is None or isinstance(model, str) else (in_stage("object")[0], model)
    ),
    "prefix": _take_prefixed,
    "claim": _take_claimed,
    "name": lambda model, _: (in_stage("name")[0], model),
}


def resolve_source(model: Any, *, checkpoint: bool = False) -> tuple[LazySource, Any]:
    """The first source of the table (`STAGES`) that takes MODEL, and what it takes: the
    object, the target after `PREFIX:`, or the name. `checkpoint`: --checkpoint was given
    (a prefix-less source then takes no name: the checkpoint's weights are the model)."""
    load_source_entry_points()
    for stage in STAGES:
        taken = _TAKES[stage](model, checkpoint)
        if taken is not None:
            return taken
    raise AssertionError("the `named` source takes every name")  # pragma: no cover


def source_names() -> list[str]:
    """`PREFIX:` of every registered source, for listings and did-you-mean messages."""
    return [f"{source.prefix}:" for source in in_stage("prefix")]
