"""What robench needs to rebuild a model: architecture, kwargs and preprocessing.

The same fields come from a model card (TOML in `models/`), from the metadata that
`robench train` stores in a `.safetensors` checkpoint, or from the command line.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from robench._core.bundled import bundled_dir
from robench._core.errors import CheckpointError, ConfigError
from robench._core.toml_files import describe_validation_error, read_toml_model

METADATA_KEY = "robench"  # safetensors metadata key holding a JSON ModelSpec


class ModelSpec(BaseModel):
    """Architecture and preprocessing; every field optional so sources can be layered."""

    model_config = ConfigDict(extra="forbid")

    architecture: str | None = None  # registered timm model name
    model_kwargs: dict[str, Any] = Field(default_factory=dict)  # passed to timm.create_model
    num_classes: int | None = Field(default=None, gt=0)
    input_size: tuple[int, int, int] | None = None  # (C, H, W)
    mean: tuple[float, ...] | None = None  # per-channel, pixel units
    std: tuple[float, ...] | None = None
    interpolation: str | None = None  # resize interpolation, e.g. "bicubic"
    crop_pct: float | None = Field(default=None, gt=0, le=1)  # center-crop fraction
    classes: list[str] | None = None  # class names in index order

    @field_validator("input_size")
    @classmethod
    def _positive_size(cls, size: tuple[int, int, int] | None) -> tuple[int, int, int] | None:
        if size is not None and min(size) < 1:
            raise ValueError(
                f"input_size {list(size)} must be (channels, height, width) of positive "
                "integers, e.g. [3, 224, 224]"
            )
        return size

    @field_validator("mean", "std")
    @classmethod
    def _finite(cls, values: tuple[float, ...] | None, info: ValidationInfo) -> Any:
        if values is None:
            return None
        if not values or not all(math.isfinite(v) for v in values):
            raise ValueError(f"{info.field_name} {list(values)} must be finite numbers")
        if info.field_name == "std" and any(v <= 0 for v in values):
            raise ValueError(f"std {list(values)} must be positive")
        return values


class ModelCard(ModelSpec):
    """A model card: a named ModelSpec plus provenance of a shipped or published checkpoint."""

    name: str  # what users type as MODEL
    description: str = ""
    checkpoint: str | None = None  # path relative to the card file
    checkpoint_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")  # lowercase hex
    dataset: str | None = None
    training_command: str | None = None
    recipe: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, float] = Field(default_factory=dict)  # clean metrics at release

    @model_validator(mode="after")
    def _one_value_per_channel(self) -> ModelCard:
        """mean and std agree with each other and with input_size's channels, std > 0."""
        channels = {
            f"{field} ({len(value)} values)": len(value)
            for field, value in (("mean", self.mean), ("std", self.std))
            if value is not None
        }
        if self.input_size is not None:
            channels[f"input_size ({self.input_size[0]} channels)"] = self.input_size[0]
        if len(set(channels.values())) > 1:
            raise ValueError(
                f"{' and '.join(channels)} disagree; give one mean and std value per channel"
            )
        return self


def spec_from_options(values: dict[str, Any]) -> ModelSpec:
    """A ModelSpec from command-line options; a bad value is one ConfigError naming its flag."""
    try:
        return ModelSpec(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        flag = "--" + field.replace("_", "-") if field != "model_kwargs" else "--model-kwargs"
        message = first["msg"].removeprefix("Value error, ")
        raise ConfigError(
            f"{flag} {first.get('input')!r} is invalid: {message}; see `robench eval --help`."
        ) from None


def bundled_cards() -> dict[str, Path]:
    return {p.stem: p for p in sorted(bundled_dir("models").glob("*.toml"))}


def read_card(path: Path) -> ModelCard:
    card, _ = read_toml_model(path, ModelCard, "model card")
    return card


def spec_from_metadata(metadata: dict[str, str], checkpoint: Path) -> ModelSpec | None:
    """The ModelSpec `robench train` stored in a checkpoint, if any."""
    raw = metadata.get(METADATA_KEY)
    if raw is None:
        return None
    try:
        return ModelSpec.model_validate(json.loads(raw))
    except (json.JSONDecodeError, ValidationError) as exc:
        detail = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise CheckpointError(
            f"checkpoint {checkpoint} has unreadable robench metadata ({detail}); pass MODEL "
            "and the preprocessing flags explicitly."
        ) from None


def metadata_from_spec(spec: ModelSpec) -> dict[str, str]:
    return {METADATA_KEY: spec.model_dump_json(exclude_none=True)}
