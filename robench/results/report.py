"""The versioned report schema and atomic JSON writes.

A report is everything needed to trust and reproduce one evaluation: versions, seed, suite
hash, checkpoint hash, the exact sample set, per-perturbation metrics with 95% intervals and
the per-sample predictions that `robench gate` pairs across runs. `robench schema` prints the
JSON Schema; docs/report.schema.json is the committed copy.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from robench._core.errors import ConfigError
from robench._core.file_modes import give_default_mode

SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MetricValue(_Strict):
    value: float  # fraction in [0, 1] for accuracies
    ci95: tuple[float, float]  # 95% confidence interval (Wilson for accuracies)
    higher_is_better: bool  # direction, used by tables and gates


class PerturbationResult(_Strict):
    name: str  # unique label within the suite
    kind: str  # registered perturbation kind
    params: dict[str, Any]  # validated parameters, pixel units, with display forms
    n_samples: int  # samples this perturbation was evaluated on
    metrics: dict[str, MetricValue]  # metric name -> value
    wall_time_s: float  # time spent on this perturbation (0 for resumed parts)


class Environment(_Strict):
    python: str
    platform: str
    torch: str
    timm: str
    torchattacks: str | None  # None when not installed
    pyautoattack: str | None
    device: str  # e.g. "cpu", "cuda:0 (NVIDIA H100)"
    num_threads: int  # torch intra-op threads
    git_sha: str | None  # of the working directory's repository, when there is one


class ModelInfo(_Strict):
    name: str  # what the user asked for (model card or registered model)
    architecture: str  # registered timm model name
    model_kwargs: dict[str, Any]
    card: str | None  # model card file, when one was used
    checkpoint: str | None  # path as given
    checkpoint_sha256: str | None
    checkpoint_layout: str | None  # where the weights were found in the file
    n_parameters: int
    normalization: dict[str, list[float]]  # {"mean": [...], "std": [...]}, inside the model
    preprocessing: dict[str, Any]  # input_size, interpolation, crop_pct
    config_sources: dict[str, str]  # which source gave each preprocessing field
    elliptical: dict[str, Any] | None  # Elliptical Attention options, for elliptical models
    randomized: bool  # two forward passes on the same input differ


class SuiteInfo(_Strict):
    name: str
    version: int
    sha256: str  # of the suite file's bytes
    path: str
    description: str


class DataInfo(_Strict):
    path: str
    kind: str  # "idx" or "image-folder"
    split: str | None
    n_total: int  # samples in the dataset
    n_samples: int  # samples evaluated (after --limit)
    limit: int | None
    indices_sha256: str  # hash of the sorted sample indices
    classes: int
    class_index_note: str  # how class indices were assigned


class SampleResults(_Strict):
    """Per-sample outcomes, aligned with `indices`; what paired statistics use."""

    indices: list[int]  # dataset indices, sorted
    labels: list[int]
    predictions: dict[str, list[int]]  # perturbation name -> top-1 prediction per sample
    top5_correct: dict[str, list[bool]]  # perturbation name -> label in top 5


class DiagnosticResult(_Strict):
    """A perturbation-free measurement: collapse, head redundancy, efficiency, attention maps."""

    name: str
    kind: str
    params: dict[str, Any]
    n_samples: int  # images the diagnostic ran on
    values: dict[str, Any]  # numbers and per-layer lists; units in the key names
    files: list[str]  # figures written (paths relative to the report's folder)


class SanityResult(_Strict):
    """One check of the sanity battery (`robench eval --sanity`) or of the always-on checks."""

    name: str  # e.g. "pgd_at_least_fgsm"
    status: Literal["pass", "warn"]
    detail: str  # one sentence with the numbers
    values: dict[str, float]  # the accuracies (fractions) or shares behind the verdict


class Report(_Strict):
    schema_version: int = Field(default=SCHEMA_VERSION)
    robench_version: str
    created_utc: str  # ISO 8601
    command: list[str]  # argv that produced the report
    environment: Environment
    model: ModelInfo
    suite: SuiteInfo
    data: DataInfo
    seed: int
    batch_size: int
    results: list[PerturbationResult]
    warnings: list[str]  # things that make a number less trustworthy
    samples: SampleResults
    diagnostics: list[DiagnosticResult] = Field(default_factory=list)  # from [[diagnostics]]
    sanity: list[SanityResult] = Field(default_factory=list)  # empty unless --sanity
    # Always-on consistency checks of the results (e.g. PGD at least as strong as FGSM at the
    # same eps); older reports have none.
    checks: list[SanityResult] = Field(default_factory=list)
    wall_time_s: float


def report_json_schema() -> dict[str, Any]:
    schema = Report.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"robench report, schema version {SCHEMA_VERSION}"
    return schema


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON next to `path` then rename, so readers never see a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        give_default_mode(fd)  # mkstemp makes 0600
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_report(report: Report, path: Path) -> None:
    write_json_atomic(path, report.model_dump(mode="json"))


def read_report(path: Path) -> Report:
    """Load and validate a report; a wrong or old file is one ConfigError sentence."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"report {path} does not exist; check the path.") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"report {path} is not readable JSON ({exc}).") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version != SCHEMA_VERSION:
        raise ConfigError(
            f"report {path} has schema_version {version!r}, this robench reads "
            f"{SCHEMA_VERSION}; re-run `robench eval` with this version."
        )
    try:
        return Report.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"report {path} does not match the schema at {where}: {first['msg']}."
        ) from None
