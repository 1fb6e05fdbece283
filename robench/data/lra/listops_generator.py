"""ListOps (Nangia & Bowman 2018) as LRA configures it, generated seeded and offline.

The distribution of LRA's generator (lra_benchmarks/data/listops.py), drawn from its own
seeded `random.Random` (not LRA's stream: LRA seeds nothing) and written as the release is:
docs/datasets.md, "Generated ListOps and Pathfinder".
"""

from __future__ import annotations

import csv
import logging
import random
from dataclasses import dataclass
from pathlib import Path

from robench._core.errors import ConfigError
from robench.data.lra.listops import CLOSE, FILES, OPERATORS

logger = logging.getLogger(__name__)

# A tree: a digit, or (operator, arguments).
Tree = int | tuple[str, list["Tree"]]


@dataclass(frozen=True)
class ListOpsSpec:
    """LRA's ListOps settings (its generator's flags)."""

    max_depth: int = 10  # a digit at this depth; the root is depth 1
    max_args: int = 10  # arguments per operator: 2 .. max_args
    min_length: int = 500  # kept lengths are strictly above this
    max_length: int = 2000  # ... and strictly below this
    operator_p: float = 0.25  # probability that a node above max_depth is an operator

    def check(self) -> None:
        """A ConfigError when no tree can have a length within the bounds."""
        if self.max_depth < 1 or self.max_args < 2:
            raise ConfigError(
                f"ListOps needs max_depth >= 1 and max_args >= 2, not {self.max_depth} and "
                f"{self.max_args}."
            )
        if self.max_length - self.min_length < 2:
            raise ConfigError(
                f"no length lies strictly between min_length {self.min_length} and max_length "
                f"{self.max_length}; widen the bounds."
            )
        longest = 1
        for _ in range(self.max_depth - 1):
            longest = 2 + self.max_args * longest
            if longest > self.min_length:
                break
        if longest <= self.min_length:
            raise ConfigError(
                f"a ListOps tree of depth {self.max_depth} with {self.max_args} arguments per "
                f"operator is at most {longest} tokens long, not above min_length "
                f"{self.min_length}; lower min_length or raise max_depth or max_args."
            )


_STALE_DRAWS = 200_000  # draws in a row without a new expression before giving up


class _TooLong(Exception):
    """The tree being drawn already reaches max_length: it would be rejected."""


def _draw(rng: random.Random, depth: int, spec: ListOpsSpec, length: list[int]) -> Tree:
    if depth < spec.max_depth and rng.random() < spec.operator_p:
        length[0] += 2
        arguments = [
            _draw(rng, depth + 1, spec, length) for _ in range(rng.randint(2, spec.max_args))
        ]
        return (rng.choice(OPERATORS), arguments)
    length[0] += 1
    if length[0] >= spec.max_length:
        raise _TooLong
    return rng.randrange(10)


def draw_tree(rng: random.Random, spec: ListOpsSpec) -> tuple[Tree, int] | None:
    """One tree and its length, or None when it is not strictly within the length bounds
    (a tree that grows to max_length is abandoned at once, not finished and rejected)."""
    length = [0]
    try:
        tree = _draw(rng, 1, spec, length)
    except _TooLong:
        return None
    return (tree, length[0]) if spec.min_length < length[0] < spec.max_length else None


def value(tree: Tree) -> int:
    """The tree's value, 0-9."""
    if isinstance(tree, int):
        return tree
    operator, arguments = tree
    values = sorted(value(a) for a in arguments)
    if operator == "[MAX":
        return values[-1]
    if operator == "[MIN":
        return values[0]
    if operator == "[SM":
        return sum(values) % 10
    middle = len(values) // 2  # [MED: LRA's int(np.median(...)), the halfway value rounded down
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) // 2


def render(tree: Tree) -> str:
    """The tree as LRA prints it: its binary form ((op, a1), a2) ... , `]`) in parentheses,
    e.g. `( ( ( [MAX 2 ) 9 ) ] )` for [MAX 2 9 ]."""
    if isinstance(tree, int):
        return str(tree)
    operator, arguments = tree
    text = f"( {operator} {render(arguments[0])} )"
    for argument in arguments[1:]:
        text = f"( {text} {render(argument)} )"
    return f"( {text} {CLOSE} )"


def generate(count: int, seed: int, spec: ListOpsSpec) -> list[tuple[str, int]]:
    """`count` distinct expressions (as LRA prints them) and their values."""
    spec.check()
    rng = random.Random(seed)
    rows: dict[str, int] = {}  # expression -> value, in drawing order
    # Draws are independent, so a long run of draws that finds nothing new means the bounds
    # admit too few expressions (with LRA's settings about 8% of draws are kept).
    stale = 0
    while len(rows) < count:
        stale += 1
        if stale > _STALE_DRAWS:
            raise ConfigError(
                f"found only {len(rows)} distinct ListOps expressions of length "
                f"{spec.min_length + 1}-{spec.max_length - 1}, not {count}: {_STALE_DRAWS} "
                "draws in a row found no new one; widen the length bounds or ask for fewer."
            )
        drawn = draw_tree(rng, spec)
        if drawn is None:
            continue
        text = render(drawn[0])
        if text not in rows:
            rows[text] = value(drawn[0])
            stale = 0
    return list(rows.items())


def write_listops(
    out: Path, sizes: dict[str, int], seed: int, spec: ListOpsSpec | None = None
) -> list[Path]:
    """Write `basic_<split>.tsv` for each split in `sizes` ("train", "val", "test" -> count)
    into the folder `out`, which must exist; the files written."""
    spec = spec or ListOpsSpec()
    rows = generate(sum(sizes.values()), seed, spec)
    written, start = [], 0
    for split, count in sizes.items():
        path = out / FILES[split]
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
            writer.writerow(["Source", "Target"])
            writer.writerows(rows[start : start + count])
        start += count
        written.append(path)
        logger.debug("wrote %d ListOps expressions to %s", count, path)
    return written
