"""Which task a transformers model solves, read from its config.json alone: transformers'
own tables (model type -> class name) decide by the config's `architectures`; a model
shipping its own code (`auto_map`) by its auto_map keys, and only with --trust-remote-code
(docs/models.md, "transformers folders").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from robench._core.errors import ConfigError

IMAGE_CLASSIFICATION = "image-classification"
LANGUAGE_MODELING = "language-modeling"
SEMANTIC_SEGMENTATION = "semantic-segmentation"  # robench/tasks/semantic_segmentation.py
TEXT_CLASSIFICATION = "text-classification"  # robench/tasks/text_classification.py

# auto_map key -> task, for models that ship their own code.
_AUTO_MAP_TASKS = {
    "AutoModelForImageClassification": IMAGE_CLASSIFICATION,
    "AutoModelForSemanticSegmentation": SEMANTIC_SEGMENTATION,
    "AutoModelForCausalLM": LANGUAGE_MODELING,
    "AutoModelForSequenceClassification": TEXT_CLASSIFICATION,
}


def _class_names(mapping: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for value in mapping.values():
        names.update([value] if isinstance(value, str) else value)
    return names


def task_tables() -> dict[str, set[str]]:
    """task -> the transformers class names that solve it (imports transformers)."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES,
        MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES,
        MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES,
    )

    return {
        IMAGE_CLASSIFICATION: _class_names(MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES),
        SEMANTIC_SEGMENTATION: _class_names(MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES),
        LANGUAGE_MODELING: _class_names(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES),
        TEXT_CLASSIFICATION: _class_names(MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES),
    }


def transformers_task(
    config: Mapping[str, Any],
    where: str,
    *,
    trust_remote_code: bool,
    tables: Mapping[str, Iterable[str]] | None = None,
    model_types: Iterable[str] | None = None,
) -> str:
    """The task of the model whose config.json is `config` (read from `where`)."""
    model_type = config.get("model_type")
    architectures = list(config.get("architectures") or [])
    if "auto_map" in config:
        return _remote_code_task(config["auto_map"], where, trust_remote_code)
    if model_types is None:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

        model_types = CONFIG_MAPPING_NAMES
    if model_type not in set(model_types):
        raise ConfigError(
            f"{where} has model_type {model_type!r}, an architecture this transformers does "
            "not know; upgrade transformers (pip install -U transformers), or save the model "
            "with its code (auto_map) and pass --trust-remote-code."
        )
    tables = tables if tables is not None else task_tables()
    for architecture in architectures:
        for task, names in tables.items():
            if architecture in set(names):
                return task
    shown = ", ".join(architectures) or "none"
    raise ConfigError(
        f"{where} is a {model_type} model with architectures {shown}, which robench cannot "
        "evaluate; robench evaluates image classifiers (...ForImageClassification), semantic "
        "segmentation models (...ForSemanticSegmentation) and causal language models "
        "(...ForCausalLM)."
    )


def _remote_code_task(auto_map: Mapping[str, Any], where: str, trust: bool) -> str:
    if not trust:
        raise ConfigError(
            f"{where} needs its own Python code (auto_map), which runs on loading; pass "
            "--trust-remote-code only if you trust the model's source."
        )
    for key, task in _AUTO_MAP_TASKS.items():
        if key in auto_map:
            return task
    raise ConfigError(
        f"{where} ships code for {', '.join(auto_map)} but none of "
        f"{', '.join(_AUTO_MAP_TASKS)}; robench evaluates image classifiers, "
        "semantic segmentation models and causal LMs."
    )
