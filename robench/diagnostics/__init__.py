"""Diagnostics: perturbation-free measurements from the paper's analyses.

Importing this package registers every built-in kind: `collapse` (Fig. 3 and 6),
`head_redundancy` (Table 18), `efficiency` (Tables 11-12) and `attention_maps` (Fig. 1);
matplotlib itself is imported only when a figure is drawn.
"""

from __future__ import annotations

# Imported for their side effect: each module registers its kind.
from robench.diagnostics import attention_maps, collapse, efficiency, redundancy  # noqa: F401
from robench.diagnostics.attention_maps import (
    plot_attention_comparison as plot_attention_comparison,
)
from robench.diagnostics.base import DIAGNOSTICS as DIAGNOSTICS
from robench.diagnostics.base import Diagnostic as Diagnostic
from robench.diagnostics.base import DiagnosticOutput as DiagnosticOutput
from robench.diagnostics.base import build_diagnostic as build_diagnostic

__all__ = [
    "DIAGNOSTICS",
    "Diagnostic",
    "DiagnosticOutput",
    "build_diagnostic",
    "plot_attention_comparison",
]
