"""Train the demo's byte-level BPE causal LM on the Python docs (models/gpt2_bpe_pydocs/).

Uses robench's training code (`robench.training.train_hf_lm.train_bpe_causal_lm`): a
byte-level BPE tokenizer and a small GPT-2 trained on the train split of the built-in
`python-docs` corpus, saved with `save_pretrained` (safetensors) so that
`robench eval hf:models/gpt2_bpe_pydocs` (and lm-evaluation-harness's `--model hf`) read it.
Seeded: the same command on the same machine writes the same folder. About two minutes on
two CPU cores:

    python examples/train_bpe_lm.py models/gpt2_bpe_pydocs
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from robench.training.train_hf_lm import BPETrainConfig, train_bpe_causal_lm


def main(out_dir: str = "models/gpt2_bpe_pydocs") -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = BPETrainConfig(out_dir=Path(out_dir), threads=2)
    summary = train_bpe_causal_lm(config)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:2])
