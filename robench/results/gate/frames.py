"""`robench.gate`: the verdict of `robench gate` from Python, its checks as a DataFrame
with the columns of `robench gate --json`'s checks, in stored units (docs/python-api.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from robench._core.errors import ConfigError, as_input_errors
from robench._core.toml_files import describe_validation_error
from robench.results.gate.formats import GateCheckSummary, gate_json, gate_summary
from robench.results.gate.policy import Policy, read_policy
from robench.results.gate.regression import GateResult, Status, exit_code, run_gate
from robench.results.report.frames import ReportSource, load_report

if TYPE_CHECKING:
    import pandas as pd

# The checks frame's columns: the JSON summary's, without the display strings.
CHECK_COLUMNS = [name for name in GateCheckSummary.model_fields if name != "shown"]


@dataclass(frozen=True)
class GateOutcome:
    """What `robench gate` decided, for Python callers."""

    result: GateResult  # every check, as the command renders them
    strict: bool  # an inconclusive check fails (`--strict`)

    @property
    def verdict(self) -> str:
        """The worst check's status: `pass`, `inconclusive` or `regressed`."""
        return self.result.status.value

    @property
    def exit_code(self) -> int:
        """What `robench gate` exits with: 0 pass, 1 regression, 4 inconclusive (strict)."""
        return exit_code(self.result.status, self.strict)

    @property
    def passed(self) -> bool:
        """True when the gate lets the candidate through (the command exits 0)."""
        return self.exit_code == 0

    @property
    def notes(self) -> list[str]:
        """What was not gated or looks off (the command prints them on stderr)."""
        return list(self.result.notes)

    @property
    def checks(self) -> pd.DataFrame:
        """One row per check: verdict, numbers, paired test and p-values."""
        import pandas as pd

        summary = gate_summary(self.result, self.strict)
        rows = [check.model_dump(include=set(CHECK_COLUMNS)) for check in summary.checks]
        return pd.DataFrame.from_records(rows, columns=CHECK_COLUMNS)

    def count(self, status: str) -> int:
        """Checks with `status` (`pass`, `inconclusive` or `regressed`)."""
        return self.result.count(Status(status))

    def to_json(self) -> str:
        """The JSON summary `robench gate --json` writes."""
        return gate_json(self.result, self.strict)

    def __repr__(self) -> str:
        counts = ", ".join(f"{self.count(s.value)} {s.value}" for s in Status)
        return f"GateOutcome(verdict={self.verdict!r}, passed={self.passed}, {counts})"


def as_policy(policy: Policy | Mapping[str, Any] | str | os.PathLike[str] | None) -> Policy:
    """The built-in policy (None), a `Policy`, a policy TOML's path, or its keys as a dict."""
    if policy is None or isinstance(policy, Policy):
        return policy or Policy()
    if isinstance(policy, Mapping):
        try:
            return Policy.model_validate(dict(policy))
        except ValidationError as exc:
            raise ConfigError(
                f"gate policy is invalid at {describe_validation_error(exc)}; see docs/ci.md."
            ) from None
    if not isinstance(policy, str | os.PathLike):
        raise ConfigError(
            f"policy={policy!r:.60} ({type(policy).__name__}) is not a gate policy; pass a "
            "Policy, the path of a policy TOML, a dict of its keys (e.g. "
            "dict(alpha=0.05)), or None for the built-in policy (docs/ci.md)."
        )
    return read_policy(Path(policy))


@as_input_errors
def gate(
    baseline: ReportSource,
    candidate: ReportSource,
    policy: Policy | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    strict: bool = False,
) -> GateOutcome:
    """Gate `candidate` against `baseline` (reports or their paths) as `robench gate` does;
    `policy` as `as_policy` takes it, `strict` as `--strict`."""
    checked = run_gate(load_report(baseline), load_report(candidate), as_policy(policy))
    return GateOutcome(checked, strict)
