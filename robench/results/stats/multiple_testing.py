"""Adjusted p-values for a family of tests: a gate decides every check at once.

`holm` (family-wise error, any dependence), `benjamini-hochberg` (false discovery rate,
independent or positively dependent checks) or `none`; why and the formulas: docs/ci.md,
"Many checks at once". Both adjustments equal statsmodels' `multipletests(method="holm" /
"fdr_bh")`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input's order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):  # rank 0 is the smallest p
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the input's order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i], reverse=True)
    adjusted = [0.0] * m
    running = 1.0
    for position, i in enumerate(order):  # position 0 is the largest p, rank m
        rank = m - position
        running = min(running, min(1.0, m * p_values[i] / rank))
        adjusted[i] = running
    return adjusted


def unadjusted(p_values: Sequence[float]) -> list[float]:
    return list(p_values)


ADJUSTMENTS: dict[str, Callable[[Sequence[float]], list[float]]] = {
    "holm": holm,
    "benjamini-hochberg": benjamini_hochberg,
    "none": unadjusted,
}


def adjust(p_values: Sequence[float], method: str) -> list[float]:
    """`p_values` adjusted by `method` (a key of ADJUSTMENTS)."""
    return ADJUSTMENTS[method](p_values)
