"""Diagnostics: perturbation-free measurements from the paper's analyses.

Importing this package registers every built-in kind by its parameter schema (`params`):
`collapse` (Fig. 3 and 6), `head_redundancy` (Table 18), `efficiency` (Tables 11-12) and
`attention_maps` (Fig. 1). The implementations (torch) are imported when a diagnostic is
built, and matplotlib only when a figure is drawn.

May import: `robench.models`, `robench.data`, `robench.results`, `robench._core`.
"""

from __future__ import annotations

from robench._core.lazy import lazy_exports
from robench.diagnostics.params import DIAGNOSTICS as DIAGNOSTICS

_LAZY = {
    "Diagnostic": "robench.diagnostics.base",
    "DiagnosticOutput": "robench.diagnostics.base",
    "build_diagnostic": "robench.diagnostics.base",
    "plot_attention_comparison": "robench.diagnostics.attention_maps",
}

__all__ = ["DIAGNOSTICS", *_LAZY]


__getattr__ = lazy_exports(__name__, _LAZY)
