"""`robench generate`: a seeded synthetic LRA dataset (ListOps, Pathfinder) in its released
layout, which `open_lra` and the `lra-listops` / `lra-pathfinder` layouts read."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

import typer

from robench._core.errors import ConfigError
from robench.cli._option_table import REQUIRED, Opt, with_options
from robench.cli._output import handle_errors


class Generated(str, Enum):
    listops = "lra-listops"
    pathfinder = "lra-pathfinder"


_LISTOPS_ONLY = ("train", "val", "test", "min_length", "max_length", "max_depth", "max_args")
_PATHFINDER_ONLY = ("n", "difficulty")
_SIZES = (("train", 96000), ("val", 2000), ("test", 2000))  # ListOps' expressions per split


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


# `robench generate`'s options, one row each (robench/cli/_option_table.py).
GENERATE_OPTIONS = (
    Opt("kind", Generated, REQUIRED, "The dataset to generate.", argument=True),
    Opt("out", Path, REQUIRED, "New folder to write (must not exist, or be empty).",
        argument=True),
    Opt("seed", int, 0, "Seed of the generator.", extra={"min": 0}),
    Opt("train", int, None, "ListOps: training expressions (96000)."),
    Opt("val", int, None, "ListOps: validation expressions (2000)."),
    Opt("test", int, None, "ListOps: test expressions (2000)."),
    Opt("min_length", int, None, "ListOps: lengths are above this (500)."),
    Opt("max_length", int, None, "ListOps: lengths are below this (2000)."),
    Opt("max_depth", int, None, "ListOps: deepest nesting (10)."),
    Opt("max_args", int, None, "ListOps: most arguments per operator (10)."),
    Opt("n", int, None, "Pathfinder: images per difficulty (1000)."),
    Opt("difficulty", list[str], None,
        "Pathfinder: curv_baseline, curv_contour_length_9, curv_contour_length_14 (repeat for "
        "several; default all three)."),
)  # fmt: skip


@handle_errors
@with_options(*GENERATE_OPTIONS)
def generate_command(**given: Any) -> None:
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
    from robench.results.report.schema import check_out_dir

    kind, out, seed = given["kind"], given["out"], given["seed"]
    _refuse_other_options(kind, given)
    if not out.exists():  # an existing OUT is for write_new_folder to judge (empty or not)
        check_out_dir(out, "OUT")
    if kind is Generated.listops:  # an option not given keeps the spec's or split's default
        shape = ("max_depth", "max_args", "min_length", "max_length")
        spec = ListOpsSpec(**{name: given[name] for name in shape if given[name] is not None})
        sizes = {split: size if given[split] is None else given[split] for split, size in _SIZES}
        written = generate_listops(out, sizes=sizes, seed=seed, spec=spec)
    else:
        written = generate_pathfinder(
            out,
            count=1000 if given["n"] is None else given["n"],
            seed=seed,
            difficulties=given["difficulty"] or DIFFICULTIES,
        )
    for path in written:
        typer.echo(str(path))
