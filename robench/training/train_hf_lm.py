"""Train a small transformers causal LM with its own byte-level BPE tokenizer on a corpus:
`train_bpe_causal_lm(config)` trains the tokenizer on the train split's documents, a
`GPT2LMHeadModel` on random crops of them, and saves both with `save_pretrained` into
`config.out_dir` (a folder `hf:FOLDER` evaluates). Seeded end to end. `examples/train_bpe_lm.py`
is the command line; models/gpt2_bpe_pydocs/README.md the card (tokenizer, data, recipe).
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from robench._core.seeding import seed_everything
from robench.training.loop import lr_at, optimizer_step

logger = logging.getLogger(__name__)

END_OF_TEXT = "<|endoftext|>"


@dataclass
class BPETrainConfig:
    """One training run of a BPE causal LM (every field is recorded in the model card)."""

    data: str = "python-docs"  # corpus (docs/text-data.md); its train split's documents
    out_dir: Path = Path("runs/gpt2-bpe")
    vocab_size: int = 2048  # BPE tokens, the 256 bytes and <|endoftext|> included
    n_positions: int = 128  # the model's maximum context: its rolling window
    n_embd: int = 64
    n_layer: int = 2
    n_head: int = 2
    steps: int = 300
    batch_size: int = 16
    lr: float = 3e-3
    warmup_steps: int = 30
    seed: int = 0
    threads: int | None = None  # torch CPU threads; None keeps torch's default


def train_bpe_tokenizer(texts: list[str], vocab_size: int) -> Any:
    """A byte-level BPE tokenizer (GPT-2's pre-tokenizer) trained on `texts`, as a
    transformers `PreTrainedTokenizerFast` with `<|endoftext|>` as BOS, EOS and UNK."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=END_OF_TEXT,
        eos_token=END_OF_TEXT,
        unk_token=END_OF_TEXT,
    )


def tiny_gpt2(tokenizer: Any, *, n_positions: int, n_embd: int, n_layer: int, n_head: int) -> Any:
    """A randomly initialised GPT-2 over `tokenizer`'s ids (dropout off: a short CPU run)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    eos = tokenizer.eos_token_id
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        bos_token_id=eos,
        eos_token_id=eos,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    return GPT2LMHeadModel(config)


def _token_stream(tokenizer: Any, texts: list[str]) -> torch.Tensor:
    """Every document's ids followed by <|endoftext|>, as one stream (N,)."""
    eos = tokenizer.eos_token_id
    ids = tokenizer(texts, verbose=False)["input_ids"]
    return torch.tensor([token for row in ids for token in (*row, eos)], dtype=torch.long)


def _train_loop(model: Any, stream: torch.Tensor, config: BPETrainConfig) -> list[float]:
    """Adam on random crops of n_positions tokens (transformers shifts the labels: position t
    predicts t + 1); the loss of every 10th step."""
    generator = torch.Generator().manual_seed(config.seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    span = config.n_positions
    losses = []
    model.train()
    for step in range(config.steps):
        starts = torch.randint(0, len(stream) - span, (config.batch_size,), generator=generator)
        batch = torch.stack([stream[s : s + span] for s in starts.tolist()])  # (B, T)
        loss = model(input_ids=batch, labels=batch).loss
        lr = lr_at(step, config.steps, config.warmup_steps, config.lr)
        optimizer_step(model, optimizer, loss, lr, clip=1.0)
        if step % 10 == 0 or step == config.steps - 1:
            losses.append(float(loss))
            logger.info("step %d/%d loss %.3f", step + 1, config.steps, float(loss))
    return losses


def train_bpe_causal_lm(config: BPETrainConfig) -> dict[str, Any]:
    """Train tokenizer and model on `config.data`'s train split and save both into
    `config.out_dir`; returns a summary (config, losses, validation perplexity)."""
    from robench.data.text.documents import read_documents

    if config.threads is not None:
        torch.set_num_threads(config.threads)
    seed_everything(config.seed)
    train_texts = list(read_documents(config.data, "train").texts)
    tokenizer = train_bpe_tokenizer(train_texts, config.vocab_size)
    model = tiny_gpt2(
        tokenizer,
        n_positions=config.n_positions,
        n_embd=config.n_embd,
        n_layer=config.n_layer,
        n_head=config.n_head,
    )
    losses = _train_loop(model, _token_stream(tokenizer, train_texts), config)
    model.eval()
    config.out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(config.out_dir, safe_serialization=True)
    tokenizer.save_pretrained(config.out_dir)
    return {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
        "train_documents": len(train_texts),
        "parameters": sum(p.numel() for p in model.parameters()),
        "final_loss": losses[-1],
        "final_train_perplexity": math.exp(losses[-1]),
    }
