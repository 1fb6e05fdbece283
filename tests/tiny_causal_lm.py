"""A tiny transformers causal LM with its own byte-level BPE tokenizer, for the tests.

Built with robench's training helpers (robench/training/train_hf_lm.py) from pydoc's help
topics: 384 BPE tokens, a 2-layer GPT-2 of 32 positions, random weights seeded, saved with
`save_pretrained` (safetensors) so that both robench (`hf:FOLDER`) and lm-evaluation-harness
(`--model hf`) read the same folder. Documents are real text (pydoc topics), some longer
than the 32-token context so that they take several rolling windows.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

N_POSITIONS = 32


def build_tiny_causal_lm(folder: Path, *, n_positions: int = N_POSITIONS) -> Path:
    from robench.data.text.documents import read_documents
    from robench.training.train_hf_lm import tiny_gpt2, train_bpe_tokenizer

    texts = list(read_documents("pydoc-topics", "train").texts)[:20]
    tokenizer = train_bpe_tokenizer(texts, 384)
    torch.manual_seed(0)
    model = tiny_gpt2(tokenizer, n_positions=n_positions, n_embd=32, n_layer=2, n_head=2)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def write_documents(path: Path, *, n: int = 5, field: str = "text") -> list[str]:
    """`n` test-split topics, cut to a few hundred characters (one under the context, one of
    unicode), as a JSON-lines file; returns the texts."""
    from robench.data.text.documents import read_documents

    topics = list(read_documents("pydoc-topics", "test").texts)
    texts = [topics[i][: 150 + 90 * i] for i in range(n - 1)] + ["Unicode: é, ü, 中文 — ok.\n"]
    with path.open("w", encoding="utf-8") as handle:
        for text in texts:
            handle.write(json.dumps({field: text}) + "\n")
    return texts
