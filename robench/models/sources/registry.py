"""Model sources: where MODEL's weights come from, chosen by the prefix of its name.

`robench eval PREFIX:TARGET` looks PREFIX up in `SOURCES` (one registry, no if/elif chain):

| prefix      | target                     | builder                                    |
|-------------|----------------------------|--------------------------------------------|
| `hf-hub`    | `ORG/NAME[@REV]`           | a timm model from the local Hub cache       |
| `local-dir` | a folder                   | a timm model saved by timm (`save_for_hf`)  |
| `hf`        | a folder or `ORG/NAME[@REV]` | a transformers model (its config says what) |

A timm pretrained tag (`resnet50.a1_in1k`) has no prefix: the `timm-pretrained-tag` source
claims it (its `claims` predicate) when no checkpoint is given. Every other name (robench's
zoo, timm architectures with `-c`, model cards, checkpoint metadata) never reaches a source
and loads as before.

A third-party package adds a source through the `robench.sources` entry-point group: the entry
point's name is the prefix, its value `package.module:builder` (imported on first use), and
the builder takes a `SourceRequest` and returns a `LoadedModel`. Registering sources by dotted
path keeps this module free of torch, so listing them stays instant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class SourceRequest:
    """What a source builder gets: the target after the prefix and the user's options."""

    name: str  # MODEL as given, prefix included
    target: str  # what follows `PREFIX:` (a folder, ORG/NAME[@REV], a tagged timm name)
    overrides: ModelSpec | None = None  # --mean/--std/--input-size/... over the model's own
    trust_remote_code: bool = False  # transformers code shipped with a model (auto_map)
    trust_checkpoint: bool = False  # unpickling arbitrary objects from .bin/.pth weights
    device: Any = "cpu"
    options: dict[str, Any] = field(default_factory=dict)


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

    @property
    def prefix(self) -> str:
        return self.name

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
) -> None:
    """Add a source; `builder` is "package.module:function", imported when first used. With
    `claims` ("package.module:predicate") the source has no `PREFIX:`: it takes the plain
    names its predicate accepts when no checkpoint is given. `modules`: what it imports
    from optional extras."""
    source = LazySource(prefix, builder, description, example, claims, weights_from, modules)
    SOURCES.register(prefix)(source)


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
    if prefix not in SOURCES or SOURCES.get(prefix).claims:
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
    for prefix in SOURCES.names():
        source = SOURCES.get(prefix)
        if source.claims and source.claim(name):
            return source
    return None


def source_names() -> list[str]:
    """`PREFIX:` of every registered source, for listings and did-you-mean messages."""
    return [f"{prefix}:" for prefix in SOURCES.names() if not SOURCES.get(prefix).claims]
