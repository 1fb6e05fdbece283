"""robench's models, registered on import: image models in timm's own registry
(`timm.create_model("deit_tiny_elliptical_patch16_224")`), language models, text and LRA
classifiers in robench's (`lm_registry.create_language_model`); docs/models.md, "robench's zoo".
"""

from __future__ import annotations

import fnmatch

import timm
from timm.models import model_entrypoint

from robench.models.layers.elliptical_attention import is_elliptical as is_elliptical
from robench.models.layers.elliptical_attention import set_differentiable as set_differentiable
from robench.models.zoo import fan as fan  # registers FAN-ViT and its Elliptical twins with timm
from robench.models.zoo import lra_transformer as lra_transformer  # registers LRA classifiers
from robench.models.zoo import moe_lm as moe_lm  # registers Switch and GLaM language models
from robench.models.zoo import segmenter as segmenter  # registers its models with timm
from robench.models.zoo import text_classifier as text_classifier  # registers text classifiers
from robench.models.zoo import transformer_lm as transformer_lm  # registers language models
from robench.models.zoo import vit_elliptical as vit_elliptical  # registers its models with timm


def list_robench_models(pattern: str = "*") -> list[str]:
    """Names of the timm-registered models that this package defines, sorted, matching
    `pattern`."""
    prefix = f"{__name__}."
    return [
        name
        for name in timm.list_models()
        if model_entrypoint(name).__module__.startswith(prefix) and fnmatch.fnmatch(name, pattern)
    ]
