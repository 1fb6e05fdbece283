"""robench: measure how robust a trained PyTorch model is.

Importing robench is cheap: it imports no torch. The public API below is loaded on first use
(PEP 562). Models register themselves in timm's registry when `robench.models.zoo` is
imported (as `robench eval` does), so `timm.create_model("deit_tiny_elliptical_patch16_224")`
works after `import robench.models.zoo`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robench._core.lazy import lazy_exports
from robench._core.version import __version__ as __version__

_LAZY = {
    "EvalOptions": "robench.evaluation.options",
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

# What type checkers and IDEs see (robench ships py.typed); at run time `__getattr__` imports
# each name on first use. tests/test_architecture.py keeps this block and `_LAZY` the same.
if TYPE_CHECKING:
    from robench._core.errors import InputError as InputError
    from robench._core.registry import Registry as Registry
    from robench.api import evaluate as evaluate
    from robench.evaluation.options import EvalOptions as EvalOptions
    from robench.evaluation.request import EvalRequest as EvalRequest
    from robench.evaluation.suites import load_suite as load_suite
    from robench.models.layers import EllipticalAttention as EllipticalAttention
    from robench.results.compare.frames import compare as compare
    from robench.results.gate.frames import gate as gate
    from robench.results.report.frames import reports_frame as reports_frame
    from robench.results.report.frames import samples_frame as samples_frame

__all__ = [
    "EllipticalAttention",
    "EvalOptions",
    "EvalRequest",
    "InputError",
    "Registry",
    "__version__",
    "compare",
    "evaluate",
    "gate",
    "load_suite",
    "reports_frame",
    "samples_frame",
]


__getattr__ = lazy_exports(__name__, _LAZY)
