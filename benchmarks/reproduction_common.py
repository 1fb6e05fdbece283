"""What the reproduction scripts share: running `robench` on one CPU thread (bit-exact reruns)
and the paired difference of two models on the same samples."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from robench.results.stats.paired_tests import mcnemar_exact

ROOT = Path(__file__).resolve().parents[1]


def robench_one_thread(argv: Sequence[str]) -> float:
    """Run `robench ARGV` on one thread (bit-exact reruns); the CPU seconds it used."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    before = os.times()
    subprocess.run([sys.executable, "-m", "robench", *argv], check=True, env=env, cwd=ROOT)
    after = os.times()
    return (after.children_user + after.children_system) - (
        before.children_user + before.children_system
    )


def paired_difference(base: Sequence[bool], ell: Sequence[bool]) -> str:
    """Elliptical - baseline in points on the same samples: "+1.5 (3 / 6, p = 0.51)", the
    samples only the baseline / only Elliptical gets right and the exact McNemar p."""
    only_base = sum(1 for x, y in zip(base, ell, strict=True) if x and not y)
    only_ell = sum(1 for x, y in zip(base, ell, strict=True) if y and not x)
    diff = 100 * (only_ell - only_base) / max(len(base), 1)
    return f"{diff:+.1f} ({only_base} / {only_ell}, p = {mcnemar_exact(only_base, only_ell):.2g})"
