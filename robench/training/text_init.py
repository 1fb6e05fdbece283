"""A text classifier initialised from a pretrained language model's checkpoint (`robench
train CLASSIFIER --init-from LM.safetensors`; docs/text-classification.md, "Training"). The LM
must be the architecture the classifier's backbone is (`PRETRAINED_BACKBONES`), so a baseline
LM does not silently load into an elliptical classifier (their parameters have the same names).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from torch import nn

from robench._core.errors import ConfigError
from robench.data.text import Vocabulary
from robench.models.checkpoints import read_checkpoint
from robench.models.spec import spec_from_metadata
from robench.models.zoo.lm_registry import create_language_model
from robench.models.zoo.text_classifier import PRETRAINED_BACKBONES, backbone_keys

logger = logging.getLogger(__name__)


def init_from_language_model(
    classifier: str, path: Path, kwargs: dict[str, Any]
) -> tuple[nn.Module, Vocabulary]:
    """`classifier` built over the vocabulary of the LM checkpoint at `path`, its backbone
    loaded from it; one sentence (ConfigError) when the LM does not fit."""
    expected = PRETRAINED_BACKBONES.get(classifier)
    if expected is None:
        raise ConfigError(
            f"{classifier} has no pretrained backbone to initialise from; --init-from takes "
            f"one of {', '.join(sorted(PRETRAINED_BACKBONES))}."
        )
    checkpoint = read_checkpoint(path)
    spec = spec_from_metadata(checkpoint.metadata, checkpoint.path)
    vocabulary = Vocabulary.from_metadata(checkpoint.metadata)
    architecture = spec.architecture if spec is not None else None
    if vocabulary is None or architecture != expected:
        raise ConfigError(
            f"--init-from {path} is {architecture or 'not a robench language model'}"
            f"{'' if vocabulary else ' without a vocabulary'}, but {classifier} starts from a "
            f"{expected} checkpoint; pretrain one with `robench train {expected} --data "
            "python-docs` and pass its best.safetensors."
        )
    network = create_language_model(classifier, vocab_size=len(vocabulary), **kwargs)
    weights = backbone_keys(checkpoint.state_dict)
    own = backbone_keys(network.state_dict())
    mismatched = [k for k in own if k not in weights or weights[k].shape != own[k].shape]
    if mismatched or len(weights) != len(own):
        raise ConfigError(
            f"the backbone of {path} does not fit {classifier} ({len(mismatched)} tensors "
            f"missing or of another shape, e.g. {(mismatched or list(weights))[0]}); pass a "
            f"{expected} checkpoint trained without shape-changing --model-kwargs."
        )
    network.load_state_dict(weights, strict=False)
    logger.info(
        "%s: backbone (%d tensors) and vocabulary (%d words) from %s",
        classifier,
        len(weights),
        len(vocabulary),
        path,
    )
    return network, vocabulary
