"""robench: measure how robust a trained PyTorch model is.

Importing robench registers its models (DeiT-Elliptical, the nano ViTs) in timm's registry,
so `timm.create_model("deit_tiny_elliptical_patch16_224")` works afterwards.
"""

__version__ = "0.1.0"

from robench import zoo as _zoo  # noqa: F401  (registers the models with timm)
from robench.evaluation import EvalRequest as EvalRequest
from robench.evaluation import evaluate as evaluate
from robench.layers import EllipticalAttention as EllipticalAttention
from robench.registry import Registry as Registry
from robench.suites import load_suite as load_suite
