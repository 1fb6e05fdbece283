"""Tables that fit the reader's width: of several layouts (widest first), the first whose
minimum width fits the console. `robench eval`, `compare` and `gate` print their rich tables
this way, so a narrow terminal gets a stacked table instead of cut cells. No torch.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.measure import Measurement

Layout = Callable[[int], RenderableType]  # spare width (cells) -> renderable

_UNBOUNDED = 1_000_000  # a width no layout reaches, to measure what a layout needs


def first_that_fits(
    console: Console, options: ConsoleOptions, layouts: dict[str, Layout]
) -> tuple[str, RenderableType]:
    """The first of `layouts` (widest first) that fits the console, with its name; the last
    one when none does. A layout fits when its minimum width does; it is then built again
    with the width left over (`spare`) to share out, e.g. to keep header words whole."""
    wide = options.update_width(_UNBOUNDED)
    last = list(layouts)[-1]
    for name, build in layouts.items():
        renderable = build(0)
        spare = options.max_width - Measurement.get(console, wide, renderable).minimum
        if spare >= 0 or name == last:
            return name, build(spare) if spare > 0 else renderable
    raise AssertionError("unreachable: the last layout is always returned")
