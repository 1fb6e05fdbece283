"""robench: measure how robust a trained PyTorch model is.

Importing robench is cheap: it imports no torch. The public API below is loaded on first use
(PEP 562). Models register themselves in timm's registry when `robench.models.zoo` is
imported (as `robench eval` does), so `timm.create_model("deit_tiny_elliptical_patch16_224")`
works after `import robench.models.zoo`.
"""

from __future__ import annotations

from robench._core.lazy import lazy_exports
from robench._core.version import __version__ as __version__

_LAZY = {
    "EvalRequest": "robench.evaluation",
    "evaluate": "robench.api",
    "InputError": "robench._core.errors",
    "EllipticalAttention": "robench.models.layers",
    "Registry": "robench._core.registry",
    "load_suite": "robench.evaluation.suites",
    # Reports as pandas DataFrames (pandas is imported on first use, not by `import robench`).
    "reports_frame": "robench.results.report.frames",
    "samples_frame": "robench.results.report.frames",
    "compare": "robench.results.compare.frames",
    "gate": "robench.results.gate.frames",
}

__all__ = ["__version__", *_LAZY]


__getattr__ = lazy_exports(__name__, _LAZY)
