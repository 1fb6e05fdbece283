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
    "fan_nano_4_p4_28",
    "fan_nano_elliptical_4_p4_28",
    "fan_small_12_p16_224",
    "fan_small_elliptical_12_p16_224",
    "fan_tiny_12_p16_224",
    "fan_tiny_elliptical_12_p16_224",
    "segmenter_nano_baseline",
    "segmenter_nano_elliptical",
    "segmenter_tiny_baseline",
    "segmenter_tiny_elliptical",
    "vit_nano_elliptical_patch4_28",
    "vit_nano_patch4_28",
)

# Registered in robench's language-model registry (robench.models.zoo.lm_registry), each with
# its `_elliptical` twin; tests/test_transformer_lm.py checks the two agree.
LANGUAGE_MODELS: tuple[str, ...] = tuple(
    sorted(
        base + twin
        for base in (
            "glam_lm_medium",
            "glam_lm_nano",
            "glam_lm_small",
            "lra_transformer",
            "lra_transformer_nano",
            "switch_classifier_nano",
            "switch_lm_medium",
            "switch_lm_nano",
            "switch_lm_small",
            "text_classifier_nano",
            "transformer_lm_medium",
            "transformer_lm_nano",
            "transformer_lm_small",
        )
        for twin in ("", "_elliptical")
    )
)
