"""`robench validate`: check suites and model cards without running a model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from robench._core.errors import EXIT_USAGE, RobenchError
from robench.cli._option_table import Opt, with_options
from robench.cli._output import err, handle_errors


def _check_suite(path: Path) -> str:
    from robench.evaluation.suites import load_suite

    loaded = load_suite(str(path))
    included = f", includes {', '.join(p.name for p in loaded.includes)}" if loaded.includes else ""
    return (
        f"suite {loaded.suite.name} v{loaded.suite.version}: {len(loaded.plan)} perturbations, "
        f"{len(loaded.diagnostics)} diagnostics{included}"
    )


def _resolved_suite(path: Path) -> str:
    """The suite as TOML with its includes resolved, headed by its files and sha256."""
    from robench._core.toml_files import dump_toml
    from robench.evaluation.suite_files import read_suite_file, resolve_suite_path

    found = resolve_suite_path(str(path))
    source = read_suite_file(found)
    files = ", ".join(str(p) for p in (found, *source.includes))
    return f"# resolved from {files}; sha256 {source.sha256}\n{dump_toml(source.data)}"


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


# `robench validate`'s options, one row each (robench/cli/_option_table.py).
VALIDATE_OPTIONS = (
    Opt("files", list[Path], None,
        "Suite or model-card .toml files [default: everything shipped].", argument=True),
    Opt("deep", bool, False,
        "Also look model cards' architectures up in timm's registry (imports torch)."),
    Opt("imports", list[str], None,
        "Module or .py file that registers models; implies --deep (repeatable).",
        flag="--import"),
    Opt("resolved", bool, False,
        "Print each suite as TOML with its includes resolved (stdout); the check lines go to "
        "stderr."),
)  # fmt: skip


@handle_errors
@with_options(*VALIDATE_OPTIONS)
def validate_command(**given: Any) -> None:
    """Validate suites and model cards (schema, perturbation parameters, checkpoint hashes).

    Needs no torch. A model card's architecture is checked against robench's own models; one
    from timm or a plugin is accepted with a note, unless --deep looks it up in timm's registry.

    Examples:
      robench validate
      robench validate my-suite.toml models/vit_nano_fmnist.toml
      robench validate --deep my-card.toml --import my_models.py
      robench validate --resolved robustbench-cifar10-l2 > l2-resolved.toml
    """
    from robench._core.plugins import PLUGIN_GROUPS, SUITE_GROUPS, load_plugins
    from robench.evaluation.suites import bundled_suites
    from robench.models.spec import bundled_cards

    files, imports, resolved = given["files"], given["imports"], given["resolved"]
    deep = given["deep"] or bool(imports)
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
    # Under --resolved stdout carries the suites (one suite: a TOML file as it is), so the
    # check lines go to stderr.
    say = (
        (lambda line: err.print(escape(line), highlight=False, soft_wrap=True))
        if resolved
        else typer.echo
    )
    for path, check in targets:
        try:
            say(f"ok   {path}: {check(path)}")
            if resolved and check is _check_suite:
                typer.echo(_resolved_suite(path))
        except RobenchError as exc:
            failures += 1
            err.print(f"[bold red]fail[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
    if failures:
        raise typer.Exit(EXIT_USAGE)
    say(f"{len(targets)} file(s) valid")


def _looks_like_card(path: Path) -> bool:
    try:
        return "architecture" in path.read_text(encoding="utf-8")
    except OSError:
        return False
