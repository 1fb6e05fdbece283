"""The `corruption` kind's parameters, validated without the corruption library, and the grid
form (`corruptions` x `severities`: docs/formats.md, "Corruptions").
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from robench._core.registry import did_you_mean
from robench.perturbations.base import PerturbationParams, register_kind
from robench.perturbations.corruptions import ALL, EXTRA, GROUPS, SEVERITIES, STANDARD

# Names a suite may give `corruptions`: every corruption, the two sets, the four groups.
CORRUPTION_SETS: dict[str, tuple[str, ...]] = {
    "standard": STANDARD,
    "extra": EXTRA,
    "all": ALL,
    **GROUPS,
}


def _known(name: Any) -> str:
    if not isinstance(name, str) or name not in ALL:
        raise ValueError(did_you_mean(str(name), list(ALL), "corruption"))
    return name


@register_kind("corruption", "robench.perturbations.corruptions.perturbation:Corruption")
class CorruptionParams(PerturbationParams):
    """An ImageNet-C corruption (imagecorruptions) at a severity, applied per sample."""

    # On the image only: a segmentation sample's label map is never corrupted.
    task: ClassVar[tuple[str, ...]] = ("image-classification", "semantic-segmentation")

    unbounded: ClassVar[bool] = True
    display: ClassVar[str | None] = "corruption"

    corruption: str  # one of the 15 standard or 4 extra ImageNet-C corruptions
    severity: int = Field(ge=1, le=5)  # 1 (mild) .. 5 (strong), as in ImageNet-C
    # "fast": robench's output-identical rewrite; "reference": the library itself.
    implementation: Literal["fast", "reference"] = "fast"

    _check_corruption = field_validator("corruption", mode="before")(_known)

    @classmethod
    def expand_grid(
        cls, label: str | None, params: dict[str, Any]
    ) -> list[tuple[str | None, dict[str, Any]]]:
        """`corruptions` x `severities` -> one (label, params) per pair; else unchanged."""
        if "corruptions" not in params and "severities" not in params:
            return [(label, params)]
        rest = {k: v for k, v in params.items() if k not in ("corruptions", "severities")}
        for single in ("corruption", "severity"):
            if single in rest:
                raise ValueError(
                    f"give either `{single}` or the grid keys `corruptions` and `severities`, "
                    "not both"
                )
        names = _corruption_list(params.get("corruptions", "standard"))
        severities = params.get("severities", list(SEVERITIES))
        if isinstance(severities, int) and not isinstance(severities, bool):
            severities = [severities]
        if not isinstance(severities, list) or not severities:
            raise ValueError(
                f"`severities` must be a non-empty list like [1, 3, 5], got {severities!r}"
            )
        prefix = f"{label}:" if label else ""
        return [
            (f"{prefix}{name}-{severity}", {**rest, "corruption": name, "severity": severity})
            for name in names
            for severity in severities
        ]


def _corruption_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        if value in CORRUPTION_SETS:
            return CORRUPTION_SETS[value]
        if value in ALL:
            return (value,)
        raise ValueError(did_you_mean(value, [*CORRUPTION_SETS, *ALL], "corruption set"))
    if isinstance(value, list) and value:
        names = tuple(_known(v) for v in value)
        if len(set(names)) != len(names):
            raise ValueError(f"`corruptions` lists a corruption twice: {list(value)}")
        return names
    raise ValueError(
        f"`corruptions` must be a set name ({', '.join(CORRUPTION_SETS)}) or a non-empty list "
        f"of corruption names, got {value!r}"
    )
