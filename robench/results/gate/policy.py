"""Gate policies: how much each perturbation and metric may drop before a gate fails.

A policy TOML sets the significance level and, per perturbation/metric glob, an absolute
and/or relative allowed drop (docs/ci.md); `Policy()` is the default used without --policy.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from robench._core.toml_files import read_toml_model
from robench.results.stats.metrics import METRICS


class Tolerance(BaseModel):
    """Allowed drop of one check; every limit that is set must hold."""

    model_config = ConfigDict(extra="forbid")

    max_abs_drop: float | None = Field(default=None, ge=0)  # stored units: 0.01 = 1 pp accuracy
    max_rel_drop: float | None = Field(default=None, ge=0)  # fraction of the baseline: 0.02 = 2%
    ignore: bool = False  # report the check but never fail on it

    @model_validator(mode="after")
    def _some_limit(self) -> Tolerance:
        if not self.ignore and self.max_abs_drop is None and self.max_rel_drop is None:
            raise ValueError("set max_abs_drop, max_rel_drop, or ignore = true")
        return self

    def allowed_drop(self, baseline: float) -> float | None:
        """The largest drop allowed from `baseline`, in stored units; None when ignored."""
        if self.ignore:
            return None
        limits = [self.max_abs_drop] if self.max_abs_drop is not None else []
        if self.max_rel_drop is not None:
            limits.append(self.max_rel_drop * abs(baseline))
        return min(limits)


class Rule(Tolerance):
    """A tolerance for the checks whose names match both glob patterns."""

    perturbation: str = "*"  # shell-style pattern over perturbation names, e.g. "pgd*"
    metric: str = "*"  # pattern over metric names, e.g. "top1"

    def matches(self, perturbation: str, metric: str) -> bool:
        found = fnmatch.fnmatchcase
        return found(perturbation, self.perturbation) and found(metric, self.metric)


class Policy(BaseModel):
    """A gate policy (TOML); the defaults here are the policy used without --policy."""

    model_config = ConfigDict(extra="forbid")

    alpha: float = Field(default=0.05, gt=0, lt=1)  # significance level of the one-sided tests
    # How the p-values of all checks are adjusted before they meet alpha (multiple_testing.py):
    # Holm controls the chance of any false regression in the gate, BH the false share.
    multiple_testing: Literal["holm", "benjamini-hochberg", "none"] = "holm"
    power: float = Field(default=0.8, gt=0, lt=1)  # power assumed by samples-needed estimates
    n_resamples: int = Field(default=10_000, ge=100)  # paired bootstrap resamples
    # Replicates of an aggregate's paired bootstrap (mCE...): each resamples every member
    # result's samples, so fewer than `n_resamples` keeps a 75-result gate to seconds.
    aggregate_resamples: int = Field(default=1_000, ge=100)
    seed: int = 0  # seed of the paired bootstrap
    default: Tolerance = Field(default_factory=lambda: Tolerance(max_abs_drop=0.02))
    rules: list[Rule] = Field(  # first matching rule wins; otherwise `metric_defaults`
        default_factory=lambda: [Rule(perturbation="clean", metric="top1", max_abs_drop=0.01)]
    )
    # Per-metric tolerances used when no rule matches, for metrics whose stored units make
    # `default` meaningless (0.02 perplexity points); by default each registered metric's own.
    metric_defaults: dict[str, Tolerance] = Field(default_factory=lambda: registered_tolerances())

    def tolerance_for(self, perturbation: str, metric: str) -> tuple[Tolerance, int | None]:
        """The first matching rule (and its index), else the metric's default, else `default`."""
        for i, rule in enumerate(self.rules):
            if rule.matches(perturbation, metric):
                return rule, i
        return self.metric_defaults.get(metric, self.default), None


def registered_tolerances() -> dict[str, Tolerance]:
    """The `gate_tolerance` of every registered metric that declares one, a plugin's too."""
    declared = {name: METRICS.get(name).gate_tolerance for name in METRICS.names()}
    return {
        name: Tolerance(max_abs_drop=found.max_abs_drop, max_rel_drop=found.max_rel_drop)
        for name, found in declared.items()
        if found is not None
    }


def read_policy(path: Path | None) -> Policy:
    """The policy in `path`, or the built-in default policy when `path` is None."""
    if path is None:
        return Policy()
    return read_toml_model(path, Policy, "gate policy", doc="docs/ci.md")[0]
