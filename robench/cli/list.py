"""`robench list`: the catalogues (models, perturbations, suites, cards, metrics, tasks,
output formats), with what `--import` plugins add."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from robench._core.registry import Registry
from robench.cli._option_table import REQUIRED, Opt, with_options
from robench.cli._output import err, handle_errors, out

if TYPE_CHECKING:
    from robench.perturbations.base import PerturbationParams


def _matching(names: Iterable[str], pattern: str | None) -> list[str]:
    return [n for n in names if not pattern or Registry.matches(n, pattern)]


def _models(pattern: str | None) -> list[tuple[str, str]]:
    import timm

    from robench._core.plugins import load_entry_points
    from robench.models.sources.registry import in_stage, load_source_entry_points
    from robench.models.spec import bundled_cards
    from robench.models.zoo import list_robench_models
    from robench.models.zoo.lm_registry import language_model_task, list_language_models
    from robench.tasks import TASKS

    load_entry_points()
    load_source_entry_points()
    ours = set(list_robench_models())
    names = _matching(timm.list_models(), pattern)
    cards = [(n, "model card") for n in _matching(bundled_cards(), pattern)]
    language = [  # each described as its task says (`TaskEntry.model_label`)
        (n, TASKS.get(language_model_task(n)).model_label)
        for n in _matching(list_language_models(), pattern)
    ]
    sources = [  # timm's tags show as timm's own rows; objects and names as themselves
        (f"{s.prefix}:", f"model source: {s.description} (e.g. {s.example})")
        for s in in_stage("prefix")
        if not pattern or Registry.matches(f"{s.prefix}:", pattern)
    ]
    timm_rows = [(n, "robench" if n in ours else "timm") for n in names]
    return sources + cards + language + timm_rows


def _suite_plugins() -> None:
    """Load the plugins a suite may use (perturbation kinds, metrics, tasks, datasets)."""
    from robench._core.plugins import SUITE_GROUPS, load_entry_points

    load_entry_points(SUITE_GROUPS)


# The model `robench list perturbations` states a kind's cost for: 10 classes (and the
# reference image, base.REFERENCE_SHAPE), the shipped Fashion-MNIST models'.
_LISTED_CLASSES = 10


def _cost(schema: type[PerturbationParams]) -> str:
    """`; cost <= N passes/sample at these defaults (...)`, or nothing for a kind whose
    defaults do not validate (a required eps or sigma: `robench eval --dry-run` costs an
    entry that gives it; a torchattacks class robench refuses)."""
    from pydantic import ValidationError

    from robench.perturbations.base import REFERENCE_SHAPE

    try:
        params = schema()
    except ValidationError:
        return ""
    passes = params.passes_per_sample_on(_LISTED_CLASSES, REFERENCE_SHAPE)
    unit = "pass" if passes == 1 else "passes"
    shown = f"; cost <= {passes:,} {unit}/sample at these defaults"
    formula = schema.cost_formula()
    if formula is None:
        return shown
    size = "x".join(map(str, REFERENCE_SHAPE))
    return f"{shown} ({_LISTED_CLASSES} classes, {size} images; attack: {formula})"


def _perturbations(pattern: str | None) -> list[tuple[str, str]]:
    from robench.perturbations import PERTURBATIONS

    _suite_plugins()

    rows = []
    for kind in PERTURBATIONS.names(pattern):
        schema = PERTURBATIONS.get(kind).Params
        params = ", ".join(
            f"{k}" + ("" if f.is_required() else f"={f.default!r}")
            for k, f in schema.model_fields.items()
        )
        threat = schema.threat_summary()
        shown = (params or "(no parameters)") + (f"; {threat}" if threat else "")
        rows.append((kind, shown + _cost(schema)))
    return rows


def _suites(pattern: str | None) -> list[tuple[str, str]]:
    from robench.evaluation.suites import bundled_suites, load_suite

    _suite_plugins()
    suites = {name: load_suite(name).suite for name in _matching(bundled_suites(), pattern)}
    return [(name, f"v{suite.version}: {suite.description}") for name, suite in suites.items()]


def _cards(pattern: str | None) -> list[tuple[str, str]]:
    from robench.models.spec import bundled_cards, read_card

    cards = bundled_cards()
    return [(name, read_card(cards[name]).description) for name in _matching(cards, pattern)]


def _metrics(pattern: str | None) -> list[tuple[str, str]]:
    from robench.results.stats.metrics import METRICS

    _suite_plugins()
    metrics = {name: METRICS.get(name) for name in METRICS.names(pattern)}
    return [(n, ("↑ " if m.higher_is_better else "↓ ") + m.description) for n, m in metrics.items()]


def _tasks(pattern: str | None) -> list[tuple[str, str]]:
    from robench.results.stats.metrics import metrics_for_task
    from robench.tasks import TASKS

    _suite_plugins()
    return [
        (name, f"{TASKS.get(name).description} (metrics: {', '.join(metrics_for_task(name))})")
        for name in TASKS.names(pattern)
    ]


def _formats(pattern: str | None) -> list[tuple[str, str]]:
    import importlib

    from robench._core.plugins import FORMAT_ENTRY_POINT_GROUP, load_entry_points
    from robench.results.report.output_formats import OUTPUT_FORMATS

    # The modules that fill each kind's registry with robench's own formats.
    for module in ("compare.tables", "compare.formats", "compare.per_corruption", "gate.formats"):
        importlib.import_module(f"robench.results.{module}")
    load_entry_points((FORMAT_ENTRY_POINT_GROUP,))
    rows = []
    for kind, registry in OUTPUT_FORMATS.items():
        for name in registry.names(pattern):
            suffixes = registry.get(name).suffixes
            files = f", files {' '.join(suffixes)}" if suffixes else ""
            rows.append((name, f"{kind} format{files}"))
    return rows


_LISTERS: dict[str, Callable[[str | None], list[tuple[str, str]]]] = {
    "models": _models,
    "perturbations": _perturbations,
    "suites": _suites,
    "cards": _cards,
    "metrics": _metrics,
    "tasks": _tasks,
    "formats": _formats,
}
# The command line's choices are the listers' names.
Catalogue = enum.Enum("Catalogue", {name: name for name in _LISTERS}, type=str)  # type: ignore[misc]


# `robench list`'s options, one row each (robench/cli/_option_table.py).
LIST_OPTIONS = (
    Opt("what", Catalogue, REQUIRED, "Which catalogue to list.", argument=True),
    Opt("pattern", str, None, "Shell-style filter, e.g. '*elliptical*'.", argument=True),
    Opt("imports", list[str], None,
        "Module or .py file whose registrations to list too (repeatable).", flag="--import"),
)  # fmt: skip


@handle_errors
@with_options(*LIST_OPTIONS)
def list_command(**given: Any) -> None:
    """List registered models, perturbations, shipped suites, model cards, metrics or tasks.

    Also `formats`: the output formats of eval, compare (and its per-corruption table) and
    gate. With --import, what a plugin registers is listed beside robench's own.

    Examples:
      robench list models '*elliptical*'
      robench list perturbations
      robench list suites
      robench list metrics --import my_plugin.py
    """
    what = given["what"]
    if given["imports"]:
        from robench._core.plugins import import_user_module

        for target in given["imports"]:
            import_user_module(target)
    rows = _LISTERS[what.value](given["pattern"])
    if not rows and given["pattern"]:
        # Not an error (a filter may match nothing), but silence would look like a hang or a bug.
        err.print(
            f"no {what.value} match {given['pattern']!r}; `robench list {what.value}` shows "
            "them all.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return
    if not out.is_terminal:
        for name, detail in rows:
            typer.echo(f"{name}\t{detail}")
        return
    table = Table(show_header=True)
    table.add_column(what.value[:-1])
    table.add_column("details")
    for row in rows:
        table.add_row(*row)
    out.print(table)
