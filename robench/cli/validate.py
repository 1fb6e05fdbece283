"""`robench validate`: check suites and model cards without running a model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from robench._core.errors import EXIT_USAGE, RobenchError
from robench.cli._output import err, handle_errors


def _check_suite(path: Path) -> str:
    from robench.evaluation.suites import load_suite

    loaded = load_suite(str(path))
    return (
        f"suite {loaded.suite.name} v{loaded.suite.version}: {len(loaded.plan)} perturbations, "
        f"{len(loaded.diagnostics)} diagnostics"
    )


def _check_card(path: Path) -> str:
    import timm

    import robench.models.zoo  # noqa: F401  (a card may name one of robench's models)
    from robench._core.errors import ConfigError
    from robench._core.registry import did_you_mean
    from robench.models.checkpoints import sha256_file
    from robench.models.spec import read_card

    card = read_card(path)
    if card.architecture is None or not timm.is_model(card.architecture):
        raise ConfigError(
            f"model card {path}: "
            + did_you_mean(str(card.architecture), timm.list_models(), "model")
        )
    if card.checkpoint:
        ckpt = path.parent / card.checkpoint
        if not ckpt.is_file():
            raise ConfigError(f"model card {path}: checkpoint {ckpt} does not exist.")
        if card.checkpoint_sha256 and sha256_file(ckpt) != card.checkpoint_sha256:
            raise ConfigError(f"model card {path}: checkpoint {ckpt} does not match its sha256.")
    return f"model card {card.name}: {card.architecture}"


@handle_errors
def validate_command(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Suite or model-card .toml files [default: everything shipped]."),
    ] = None,
) -> None:
    """Validate suites and model cards (schema, perturbation parameters, checkpoint hashes).

    Examples:
      robench validate
      robench validate my-suite.toml models/vit_nano_fmnist.toml
    """
    from robench.evaluation.suites import bundled_suites
    from robench.models.spec import bundled_cards

    if files:
        targets = [
            (p, _check_card if p.parent.name == "models" or _looks_like_card(p) else _check_suite)
            for p in files
        ]
    else:
        targets = [(p, _check_suite) for p in bundled_suites().values()]
        targets += [(p, _check_card) for p in bundled_cards().values()]
    failures = 0
    for path, check in targets:
        try:
            typer.echo(f"ok   {path}: {check(path)}")
        except RobenchError as exc:
            failures += 1
            err.print(f"[bold red]fail[/] {exc}", highlight=False)
    if failures:
        raise typer.Exit(EXIT_USAGE)
    typer.echo(f"{len(targets)} file(s) valid")


def _looks_like_card(path: Path) -> bool:
    try:
        return "architecture" in path.read_text(encoding="utf-8")
    except OSError:
        return False
