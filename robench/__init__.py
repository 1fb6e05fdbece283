"""robench: measure how robust a trained PyTorch model is.

Importing robench registers its models (DeiT-Elliptical, the nano ViTs) in timm's registry,
so `timm.create_model("deit_tiny_elliptical_patch16_224")` works afterwards.
"""

__version__ = "0.1.0"

from robench import zoo as _zoo  # noqa: E402,F401  (registers the models with timm)
from robench.evaluation import EvalRequest as EvalRequest  # noqa: E402
from robench.evaluation import evaluate as evaluate  # noqa: E402
from robench.layers import EllipticalAttention as EllipticalAttention  # noqa: E402
from robench.registry import Registry as Registry  # noqa: E402
from robench.suites import load_suite as load_suite  # noqa: E402
