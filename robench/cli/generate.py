"""`robench generate`: a seeded synthetic LRA dataset (ListOps, Pathfinder) in its released
layout, which `open_lra` and the `lra-listops` / `lra-pathfinder` layouts read."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from robench._core.errors import ConfigError
from robench.cli._output import handle_errors


class Generated(str, Enum):
    listops = "lra-listops"
    pathfinder = "lra-pathfinder"


_LISTOPS_ONLY = ("train", "val", "test", "min_length", "max_length", "max_depth", "max_args")
_PATHFINDER_ONLY = ("n", "difficulty")


def _refuse_other_options(kind: Generated, given: dict[str, Any]) -> None:
    listops = kind is Generated.listops
    other = _PATHFINDER_ONLY if listops else _LISTOPS_ONLY
    wrong = [name for name in other if given[name] not in (None, [])]
    if wrong:
        flags = ", ".join("--" + name.replace("_", "-") for name in wrong)
        verb = "applies" if len(wrong) == 1 else "apply"
        owner = Generated.pathfinder if listops else Generated.listops
        raise ConfigError(
            f"{flags} {verb} to {owner.value} only, not {kind.value}; see `robench generate "
            "--help`."
        )


@handle_errors
def generate_command(  # long: 50 lines of typer options and help; 25 of code
    kind: Annotated[Generated, typer.Argument(help="The dataset to generate.")],
    out: Annotated[Path, typer.Argument(help="New folder to write (must not exist, or be empty).")],
    seed: Annotated[int, typer.Option(help="Seed of the generator.", min=0)] = 0,
    train: Annotated[int | None, typer.Option(help="ListOps: training expressions (96000).")] = (
        None
    ),
    val: Annotated[int | None, typer.Option(help="ListOps: validation expressions (2000).")] = (
        None
    ),
    test: Annotated[int | None, typer.Option(help="ListOps: test expressions (2000).")] = None,
    min_length: Annotated[
        int | None, typer.Option(help="ListOps: lengths are above this (500).")
    ] = None,
    max_length: Annotated[
        int | None, typer.Option(help="ListOps: lengths are below this (2000).")
    ] = None,
    max_depth: Annotated[int | None, typer.Option(help="ListOps: deepest nesting (10).")] = None,
    max_args: Annotated[
        int | None, typer.Option(help="ListOps: most arguments per operator (10).")
    ] = (None),
    n: Annotated[
        int | None, typer.Option("--n", help="Pathfinder: images per difficulty (1000).")
    ] = None,
    difficulty: Annotated[
        list[str] | None,
        typer.Option(
            help="Pathfinder: curv_baseline, curv_contour_length_9, curv_contour_length_14 "
            "(repeat for several; default all three)."
        ),
    ] = None,
) -> None:
    """Write a seeded synthetic LRA dataset (ListOps or Pathfinder) in its released layout.

    ListOps (Nangia & Bowman 2018, as LRA configures it): MAX, MIN, MED and SUM_MOD over
    digits, 2-10 arguments, depth at most 10, lengths strictly between 500 and 2000, written
    as OUT/basic_{train,val,test}.tsv. Pathfinder (Linsley et al. 2018): 32x32 images of two
    dashed paths and distractors with two markers, labelled 1 when the markers are on one
    path, written as OUT/<difficulty>/imgs/<n>/*.png + OUT/<difficulty>/metadata/<n>.npy.
    The paths written go to stdout; docs/datasets.md describes both layouts.

    Examples:
      robench generate lra-listops data/listops --train 2000 --val 200 --test 200
      robench generate lra-listops data/listops-short --min-length 20 --max-length 200
      robench generate lra-pathfinder data/pathfinder32 --n 2000 --difficulty curv_baseline
    """
    from robench.data.lra.generate import generate_listops, generate_pathfinder
    from robench.data.lra.listops_generator import ListOpsSpec
    from robench.data.lra.pathfinder import DIFFICULTIES

    _refuse_other_options(kind, dict(locals()))
    if kind is Generated.listops:
        defaults = ListOpsSpec()
        spec = ListOpsSpec(
            max_depth=defaults.max_depth if max_depth is None else max_depth,
            max_args=defaults.max_args if max_args is None else max_args,
            min_length=defaults.min_length if min_length is None else min_length,
            max_length=defaults.max_length if max_length is None else max_length,
        )
        sizes = {
            "train": 96000 if train is None else train,
            "val": 2000 if val is None else val,
            "test": 2000 if test is None else test,
        }
        written = generate_listops(out, sizes=sizes, seed=seed, spec=spec)
    else:
        written = generate_pathfinder(
            out, count=1000 if n is None else n, seed=seed, difficulties=difficulty or DIFFICULTIES
        )
    for path in written:
        typer.echo(str(path))
