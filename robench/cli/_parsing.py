"""Parsers for comma-separated command-line values (`--mean 0.5,0.5,0.5`)."""

from __future__ import annotations

from robench._core.errors import ConfigError


def float_list(text: str | None, option: str) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise ConfigError(
            f"{option} {text!r} is not a comma-separated list of numbers; e.g. 0.485,0.456,0.406."
        ) from None


def input_size(text: str | None) -> tuple[int, int, int] | None:
    if text is None:
        return None
    parts = text.split(",")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or min(values) < 1:
        raise ConfigError(
            f"--input-size {text!r} must be C,H,W with positive integers, e.g. 3,224,224."
        )
    return values  # type: ignore[return-value]
