"""A sweep plan (TOML): models x suites x seeds, shared `robench eval` options, per-job
resources and the executor that runs the jobs (docs/sweeps.md has the format).

Relative paths in a plan (checkpoints, cards, suite files, data, `out_dir`) are relative to the
plan file's folder: every job runs there, so a plan means the same from any working directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from robench._core.toml_files import read_toml_model
from robench.evaluation.options.ranges import MAX_SEED  # as `robench eval --seed`

__all__ = ["ModelEntry", "Resources", "SweepPlan", "read_plan"]


# A value of an eval option: a flag's value, a switch, a repeated flag or `data`'s NAME = PATH.
OptionValue = str | int | float | bool | list[str | int | float] | dict[str, Any]


class ModelEntry(BaseModel):
    """One model of the sweep: what `robench eval` loads, and under which name."""

    model_config = ConfigDict(extra="forbid")

    # Row label and report file name; default: the model's last name part, else the card's or
    # the checkpoint's file stem.
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
    model: str | None = None  # registered name, timm tag, PREFIX:TARGET source or card name
    card: str | None = None  # a model card .toml (instead of `model`)
    checkpoint: str | None = None  # weights file; optional with a card or a trained checkpoint
    options: dict[str, OptionValue] = Field(default_factory=dict)  # eval options over [eval]

    @model_validator(mode="after")
    def _names_a_model(self) -> ModelEntry:
        if self.model is not None and self.card is not None:
            raise ValueError("give `model` or `card`, not both")
        if self.model is None and self.card is None and self.checkpoint is None:
            raise ValueError("give `model`, `card` or `checkpoint`")
        return self

    @property
    def target(self) -> str | None:
        """MODEL as `robench eval` takes it."""
        return self.card if self.card is not None else self.model

    @property
    def label(self) -> str:
        if self.name is not None:
            return self.name
        for text in (self.model, self.card, self.checkpoint):
            if text:
                return Path(text.rsplit(":", 1)[-1]).stem or "model"
        return "model"


class Resources(BaseModel):
    """What one job needs; each executor turns it into its own terms or refuses it."""

    model_config = ConfigDict(extra="forbid")

    gpus: int = Field(default=0, ge=0)  # GPUs per job (local: split between the workers)
    cpus: int = Field(default=1, ge=1)  # CPU cores per job (threads of the evaluation)
    mem_gb: float | None = Field(default=None, gt=0)  # memory per job (SLURM --mem)
    time_min: int | None = Field(default=None, ge=1)  # wall-time limit per job
    # Run the job's eval under torchrun, one process per GPU (per CPU without GPUs).
    torchrun: bool = False

    @property
    def processes(self) -> int:
        """Processes one job starts: torchrun's, else one."""
        return (self.gpus or self.cpus) if self.torchrun else 1


class SweepPlan(BaseModel):
    """The plan file: every (model, suite, seed) is one `robench eval` job."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
    out_dir: str | None = None  # reports, logs and job states; default runs/sweeps/NAME
    executor: str = "local"  # a name in EXECUTORS: local, slurm or a plugin's
    imports: list[str] = Field(default_factory=list)  # modules that register executors
    models: list[ModelEntry] = Field(min_length=1)
    suites: list[str] = Field(min_length=1)  # shipped suite names or .toml paths
    seeds: list[int] = Field(default_factory=lambda: [0])
    eval: dict[str, OptionValue] = Field(default_factory=dict)  # options of every job
    resources: Resources = Field(default_factory=Resources)
    # Per-executor settings, e.g. [executors.slurm] partition = "gpu"; read by that executor.
    executors: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("seeds")
    @classmethod
    def _some_seed(cls, seeds: list[int]) -> list[int]:
        if not seeds:
            raise ValueError("list at least one seed")
        bad = [seed for seed in seeds if not 0 <= seed <= MAX_SEED]
        if bad:  # `robench eval --seed` would refuse each job once it had started
            raise ValueError(f"seeds must be >= 0 and <= {MAX_SEED} (a 64-bit seed): {bad[0]}")
        return seeds


def read_plan(path: Path) -> SweepPlan:
    """Parse and validate a plan file (its entries are checked by `robench.evaluation.sweeps
    .jobs.plan_jobs`)."""
    return read_toml_model(path, SweepPlan, "sweep plan", doc="docs/sweeps.md")[0]


def out_dir(plan: SweepPlan, plan_path: Path) -> Path:
    """The sweep's folder: `out_dir`, else runs/sweeps/NAME, beside the plan file."""
    name = plan.name or plan_path.stem
    folder = Path(plan.out_dir) if plan.out_dir else Path("runs") / "sweeps" / name
    return (plan_path.resolve().parent / folder).resolve()
