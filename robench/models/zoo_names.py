"""The names of robench's own models, readable without importing timm or torch.

`robench validate` checks a model card's architecture against this list, so validating a
card of a robench model needs no torch. `robench.models.zoo` registers exactly these names in
timm's registry; `tests/test_cli.py` fails when the two disagree, so add a name here
when the zoo gains a model.
"""

from __future__ import annotations

ZOO_MODELS: tuple[str, ...] = (
    "deit_base_elliptical_patch16_224",
    "deit_small_elliptical_patch16_224",
    "deit_tiny_elliptical_patch16_224",
    "segmenter_nano_baseline",
    "segmenter_nano_elliptical",
    "segmenter_tiny_baseline",
    "segmenter_tiny_elliptical",
    "vit_nano_elliptical_patch4_28",
    "vit_nano_patch4_28",
)

# Registered in robench's language-model registry (robench.models.zoo.lm_registry) by
# robench.models.zoo.transformer_lm; tests/test_transformer_lm.py checks the two agree.
LANGUAGE_MODELS: tuple[str, ...] = (
    "transformer_lm_medium",
    "transformer_lm_medium_elliptical",
    "transformer_lm_nano",
    "transformer_lm_nano_elliptical",
    "transformer_lm_small",
    "transformer_lm_small_elliptical",
)
