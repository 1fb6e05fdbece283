"""Numbers in pixel units that suites may write as fractions ("1/255").

A suite stores the float and keeps the display form, so reports and tables show "1/255"
while every computation uses 0.00392156862745098.
"""

from __future__ import annotations

import math
from fractions import Fraction

from robench._core.errors import ConfigError


def parse_pixel_value(value: float | int | str, what: str = "value") -> float:
    """Parse `0.1`, `"0.25/255"` or `"1/255"` into a float; reject anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{what} must be a number or a fraction like '1/255', not {value!r}.")
    try:
        if isinstance(value, int | float):
            parsed = float(value)
        elif "/" in value:
            num, den = value.strip().split("/", 1)
            parsed = float(num) / float(den)
        else:
            parsed = float(Fraction(value.strip()))
    except (ValueError, ZeroDivisionError, OverflowError):
        parsed = math.nan
    if not math.isfinite(parsed):
        raise ConfigError(
            f"{what} {value!r} is not a finite number; write a float (0.0039) or a fraction "
            "('1/255')."
        )
    return parsed


def display_pixel_value(value: float) -> str:
    """Show `value` as written when short (0.1), else as k/255 when it is a multiple of
    1/(4*255) (1/255, 0.25/255), else as a float with 6 significant digits."""
    if len(repr(value)) <= 6:
        return f"{value:g}"
    grey = value * 255
    for denom in (1, 2, 4):
        scaled = grey * denom
        if abs(scaled - round(scaled)) < 1e-6:
            num = round(scaled) / denom
            return f"{num:g}/255"
    return f"{value:.6g}"
