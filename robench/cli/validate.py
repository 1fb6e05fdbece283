"""`robench validate`: check suites and model cards without running a model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from robench._core.errors import EXIT_USAGE, RobenchError
from robench.cli._output import err, handle_errors


def _check_suite(path: Path) -> str:
    from robench.evaluation.suites import load_suite

    loaded = load_suite(str(path))
    return (
        f"suite {loaded.suite.name} v{loaded.suite.version}: {len(loaded.plan)} perturbations, "
        f"{len(loaded.diagnostics)} diagnostics"
    )


def _card_checker(deep: bool) -> Callable[[Path], str]:
    def check(path: Path) -> str:
        from robench.models.cards import check_card

        checked = check_card(path, deep=deep)
        for note in checked.notes:
            err.print(
                f"[yellow]note:[/] {escape(f'{path}: {note}')}", highlight=False, soft_wrap=True
            )
        return f"model card {checked.card.name}: {checked.card.architecture}"

    return check


@handle_errors
def validate_command(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Suite or model-card .toml files [default: everything shipped]."),
    ] = None,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="Also look model cards' architectures up in timm's registry (imports torch).",
        ),
    ] = False,
    imports: Annotated[
        list[str] | None,
        typer.Option(
            "--import",
            help="Module or .py file that registers models; implies --deep (repeatable).",
        ),
    ] = None,
) -> None:
    """Validate suites and model cards (schema, perturbation parameters, checkpoint hashes).

    Needs no torch. A model card's architecture is checked against robench's own models; one
    from timm or a plugin is accepted with a note, unless --deep looks it up in timm's registry.

    Examples:
      robench validate
      robench validate my-suite.toml models/vit_nano_fmnist.toml
      robench validate --deep my-card.toml --import my_models.py
    """
    from robench._core.plugins import PLUGIN_GROUPS, SUITE_GROUPS, load_plugins
    from robench.evaluation.suites import bundled_suites
    from robench.models.spec import bundled_cards

    deep = deep or bool(imports)
    # Plugins first, so a suite may use what they register; the models' group only with
    # --deep (model plugins import torch).
    load_plugins(imports or (), PLUGIN_GROUPS if deep else SUITE_GROUPS)
    check_card = _card_checker(deep)
    if files:
        targets = [
            (p, check_card if p.parent.name == "models" or _looks_like_card(p) else _check_suite)
            for p in files
        ]
    else:
        targets = [(p, _check_suite) for p in bundled_suites().values()]
        targets += [(p, check_card) for p in bundled_cards().values()]
    failures = 0
    for path, check in targets:
        try:
            typer.echo(f"ok   {path}: {check(path)}")
        except RobenchError as exc:
            failures += 1
            err.print(f"[bold red]fail[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
    if failures:
        raise typer.Exit(EXIT_USAGE)
    typer.echo(f"{len(targets)} file(s) valid")


def _looks_like_card(path: Path) -> bool:
    try:
        return "architecture" in path.read_text(encoding="utf-8")
    except OSError:
        return False
