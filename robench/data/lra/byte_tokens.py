"""Byte-level tokens, as LRA's text and retrieval tasks encode documents: tfds'
`ByteTextEncoder` (text_encoder.py, `pad_incr`) makes every byte the id byte + 1, 0 pads.
Readers keep the raw bytes (uint8) and `SequenceDataset` adds the 1 (`offset=BYTE_OFFSET`).
"""

from __future__ import annotations

import numpy as np

# What a byte's id is its value plus.
BYTE_OFFSET = 1
PAD_ID = 0
VOCAB_SIZE = 256 + BYTE_OFFSET


def raw_bytes(data: bytes) -> np.ndarray:
    """A document's bytes as a uint8 array (ids are these plus BYTE_OFFSET)."""
    return np.frombuffer(data, dtype=np.uint8)
