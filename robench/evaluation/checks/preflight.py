"""Wrong names answered before torch loads: `robench eval` and `robench.evaluate`'s first step
(docs/architecture.md, the torch-free commands: what is checked, against which catalogues).

Only what is certainly wrong is refused, with the loaders' own sentence: a name this module
cannot judge (a plugin's model, a timm whose names the catalogue does not hold, a suite entry a
plugin registers) is left to the loaders, and with `--import` nothing is checked here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from robench._core.errors import CheckpointError, ConfigError

# Suites given as Python data (robench.evaluate) have no name to check.
SuiteArg = str | Path | Mapping[str, object] | list[object] | None


@dataclass(frozen=True)
class Preflight:
    """What `robench eval MODEL -c CKPT -s SUITE --surrogate ...` names, by their options."""

    model: str | None = None
    checkpoint: str | Path | None = None
    suite: SuiteArg = None
    surrogate: object = None  # a MODEL name, or a module held in memory (not checked)
    surrogate_checkpoint: str | Path | None = None
    imports: tuple[str, ...] = ()
    # Options a model loaded from a source refuses (--ema, --num-classes): that refusal is
    # the loader's first answer, so the source's target is then left to it.
    source_refusals: bool = False


def check_names(given: Preflight) -> None:
    """Raise the loaders' ConfigError or CheckpointError for a name or path that is certainly
    wrong; return quietly otherwise (the loaders check the rest)."""
    if given.imports:
        return  # an imported module may register any model, suite entry or source
    _check_checkpoint(given.checkpoint)
    if isinstance(given.surrogate, str):  # a surrogate object takes no checkpoint: said later
        _check_checkpoint(given.surrogate_checkpoint)
    if isinstance(given.suite, (str, Path)):
        _check_suite(str(given.suite))
    if isinstance(given.model, str):
        check_model_name(
            given.model,
            has_checkpoint=given.checkpoint is not None,
            sourced_refused=given.source_refusals,
        )
    if isinstance(given.surrogate, str):
        check_model_name(given.surrogate, has_checkpoint=given.surrogate_checkpoint is not None)


def _check_checkpoint(path: str | Path | None) -> None:
    """The message `read_checkpoint` gives for a path that is no file."""
    if path is None:
        return
    path = Path(path)
    if not path.is_file():
        state = "is a directory" if path.is_dir() else "does not exist"
        raise CheckpointError(
            f"checkpoint {str(path)!r} {state}; pass the path of a checkpoint file."
        )


def _check_suite(name_or_path: str) -> None:
    """Read and validate the suite as `load_suite` will (its perturbation names too), after
    the suite plugins installed as packages have registered theirs."""
    from robench._core.plugins import SUITE_GROUPS, load_plugins
    from robench.evaluation.suites import load_suite

    load_plugins((), SUITE_GROUPS)
    load_suite(name_or_path)


def check_model_name(name: str, *, has_checkpoint: bool, sourced_refused: bool = False) -> None:
    """MODEL as `load_model` resolves it: a source prefix, a model card, robench's zoo or
    language models, a timm architecture or pretrained tag. `sourced_refused`: options a
    source refuses were given (the loader says so first; its target is not checked here)."""
    from robench.models.sources.registry import source_names, split_source

    if _has_model_plugins():
        return  # an installed package may register any name; timm checks it later
    found = split_source(name)
    if found is not None:
        source, target = found
        check = _SOURCE_CHECKS.get(source.prefix)
        if check is not None and not (has_checkpoint or sourced_refused):
            error = source.missing_extra(name)
            if error is not None:
                raise error
            check(target)
        return
    if name.endswith(".toml"):
        _check_card(Path(name), has_checkpoint, missing=f"model card {name} does not exist")
        return
    from robench.models.spec import bundled_cards

    cards = bundled_cards()
    if name in cards:
        _check_card(cards[name], has_checkpoint, missing="")
        return
    _check_registered(name, has_checkpoint, sourced_refused, source_names())


def _has_model_plugins() -> bool:
    from robench._core import plugins

    groups = (plugins.ENTRY_POINT_GROUP, plugins.SOURCE_ENTRY_POINT_GROUP)
    return any(len(plugins.installed_entry_points(group)) for group in groups)


def _check_card(path: Path, has_checkpoint: bool, missing: str) -> None:
    """A card path that is no file, or a card whose own checkpoint is missing."""
    if not path.is_file():
        raise ConfigError(f"{missing}; check the path.")
    from robench.models.spec import read_card

    card = read_card(path)
    if card.checkpoint is not None and not has_checkpoint:
        _check_checkpoint((path.parent / card.checkpoint).resolve())


def _check_registered(
    name: str, has_checkpoint: bool, sourced_refused: bool, prefixes: list[str]
) -> None:
    """robench's zoo and language models, then timm's names from the catalogue."""
    from robench.models.timm_catalogue import trusted_catalogue
    from robench.models.zoo_names import LANGUAGE_MODELS, ZOO_MODELS

    if name in ZOO_MODELS or name in LANGUAGE_MODELS:
        return
    catalogue = trusted_catalogue()
    if catalogue is None:
        return  # another timm: its own registry says, once imported
    architecture = name.partition(".")[0]
    if name in catalogue.pretrained and not has_checkpoint:
        hub_id = catalogue.pretrained[name]
        if hub_id and not sourced_refused:  # no Hub weights: the loader's own sentence says so
            _hub_repo(hub_id)
        return
    if architecture in catalogue.architectures or architecture in ZOO_MODELS:
        if "." in name and not has_checkpoint and not sourced_refused:
            _check_tag(name, architecture, catalogue.pretrained)
        return
    if _registered_in_process(name):
        return
    from robench.models.names import unknown_model_message
    from robench.models.spec import bundled_cards

    known = catalogue.names() | set(ZOO_MODELS) | set(LANGUAGE_MODELS) | set(bundled_cards())
    raise ConfigError(unknown_model_message(name, known=sorted(known | set(prefixes))))


def _registered_in_process(name: str) -> bool:
    """A model this process registered itself (a module imported before the call, as
    `--import` does for the CLI): robench's language-model registry or timm's, read only
    when already imported (nothing here imports torch)."""
    import sys

    lm_registry = sys.modules.get("robench.models.zoo.lm_registry")
    if lm_registry is not None and lm_registry.is_language_model(name):
        return True
    timm = sys.modules.get("timm")
    return timm is not None and "." not in name and timm.is_model(name)


def _check_tag(name: str, architecture: str, pretrained: dict[str, str]) -> None:
    """A tag timm does not have for a known architecture: the sentence of the timm source's
    `is_pretrained_tag`, with its closest tags."""
    import difflib

    tags = [tag for tag in pretrained if tag.partition(".")[0] == architecture]
    close = difflib.get_close_matches(name, tags, n=3, cutoff=0.5)
    hint = f" (closest: {', '.join(close)})" if close else ""
    raise ConfigError(
        f"timm has no pretrained tag {name.partition('.')[2]!r} for {architecture}{hint}; "
        f"`robench list models '{architecture}.*'` lists its tags."
    )


def _local_folder(target: str) -> None:
    from robench.models.sources.model_folder import read_model_config

    read_model_config(Path(target).expanduser(), "timm")


def _hub_repo(target: str) -> None:
    from robench.models.sources.hf_cache import find_cached_repo

    find_cached_repo(target)


def _transformers_folder(target: str) -> None:
    """`hf:` takes a folder when one exists, else a repo in the local cache."""
    path = Path(target).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ConfigError(f"hf:{target} is a file; pass the model's folder (config.json).")
        return
    if target.startswith((".", "/", "~")):
        raise ConfigError(f"model folder {target} does not exist; check the path after hf:.")
    _hub_repo(target)


# Source prefix -> its torch-free check of the target; a plugin's source is checked by itself.
_SOURCE_CHECKS: dict[str, Callable[[str], None]] = {
    "hf-hub": _hub_repo,
    "local-dir": _local_folder,
    "hf": _transformers_folder,
}
