"""Example plugin: a Hugging Face `transformers` causal LM (GPT-2) as a robench language model.

Registers `hf_gpt2_lm` in robench's language-model registry. The builder makes a randomly
initialised `GPT2LMHeadModel` from its keyword arguments; it never downloads anything (no
`from_pretrained` with a hub name). Needs the optional extra: `pip install 'robench[hf]'`.

Evaluate a checkpoint of it (safetensors with robench's ModelSpec and vocabulary metadata)::

    robench eval --import examples/hf_causal_lm_plugin.py -c my_gpt2.safetensors \\
        -s text-smoke --data pydoc-topics

The contract (docs/language-models.md): the model takes token ids (B, T) and returns logits
(B, T, vocab_size); position t depends only on tokens <= t. GPT-2's attention is causal and
`.logits` has that shape, so the wrapper only unpacks the output and checks the length.

Vocabulary: the token ids are robench's, not GPT-2's. robench's text pipeline is word-level:
text is split into whitespace words, `<eos>` (id 0) ends each line, `<unk>` (id 1) stands for
rare words, and the word list travels in the checkpoint's `robench_vocabulary` metadata.
A GPT-2 with its own tokenizer (BPE, SentencePiece; a pretrained one included) is not a job for
this plugin: evaluate its `save_pretrained` folder with `robench eval hf:FOLDER`, which scores
documents with the model's own tokenizer exactly as lm-evaluation-harness does
(docs/language-models.md, "Subword models").

Your own pretrained weights therefore work when the model was trained over a robench
vocabulary (e.g. a GPT-2 trained with `transformers` on text encoded by
`robench.data.text.Vocabulary`, so that its `vocab_size == len(vocabulary)`). Convert it once,
from a local directory, into a robench checkpoint::

    from transformers import GPT2LMHeadModel
    from robench.models.checkpoints import save_safetensors
    from robench.models.spec import ModelSpec, metadata_from_spec

    hf = GPT2LMHeadModel.from_pretrained("/path/to/local_dir", local_files_only=True)
    c = hf.config
    kwargs = dict(n_positions=c.n_positions, n_embd=c.n_embd, n_layer=c.n_layer, n_head=c.n_head)
    metadata = metadata_from_spec(ModelSpec(architecture="hf_gpt2_lm", model_kwargs=kwargs))
    metadata.update(vocabulary.to_metadata())  # the Vocabulary the model was trained on
    save_safetensors(HFCausalLM(hf).state_dict(), "my_gpt2.safetensors", metadata)

robench then builds `hf_gpt2_lm` from those kwargs and loads the weights strictly. GPT-2 ties
`lm_head.weight` to `transformer.wte.weight`; `save_safetensors` writes both keys (as copies)
and loading fills the one shared tensor, so the checkpoint round-trips. Alternatively, register
your own builder that calls `from_pretrained(local_dir, local_files_only=True)`; robench still
needs a checkpoint for the vocabulary, and its weights replace the pretrained ones.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from robench._core.errors import ConfigError, DataError
from robench._core.registry import did_you_mean
from robench.models.zoo.lm_registry import register_language_model

# Small defaults: about 0.13M parameters plus the (vocab_size, n_embd) token embedding.
_GPT2_DEFAULTS: dict[str, Any] = dict(n_positions=512, n_embd=64, n_layer=2, n_head=2)


class HFCausalLM(nn.Module):
    """Adapts a `transformers` causal LM to robench's contract: token ids in, logits out."""

    def __init__(self, model: nn.Module, max_length: int | None = None) -> None:
        super().__init__()
        self.model = model
        # Longest input the position embedding covers (GPT-2's n_positions); None: no limit.
        self.max_length = max_length

    def forward(self, tokens: Tensor) -> Tensor:
        """Next-token logits (B, T, V) of token ids (B, T)."""
        if self.max_length is not None and tokens.shape[-1] > self.max_length:
            raise DataError(
                f"windows of {tokens.shape[-1]} tokens are longer than the model's "
                f"{self.max_length} positions; pass a smaller --target-length/--context, or "
                "build the model with a larger n_positions."
            )
        return self.model(input_ids=tokens).logits  # (B, T, V)


@register_language_model
def hf_gpt2_lm(vocab_size: int, **kwargs: Any) -> HFCausalLM:
    """A randomly initialised GPT-2 over `vocab_size` tokens; kwargs are `GPT2Config` fields
    (`n_positions`, `n_embd`, `n_layer`, `n_head`, `resid_pdrop`, ...)."""
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ModuleNotFoundError:
        raise ConfigError(
            "hf_gpt2_lm needs Hugging Face transformers, which is not installed; install the "
            "optional extra with pip install 'robench[hf]'."
        ) from None
    known = GPT2Config().to_dict()  # GPT2Config keeps unknown kwargs silently: check names
    for name in kwargs:
        if name not in known or name == "vocab_size":
            raise ConfigError(
                did_you_mean(name, sorted(set(known) - {"vocab_size"}), "GPT2Config field")[:-1]
                + " (hf_gpt2_lm takes GPT2Config fields; vocab_size comes from the vocabulary)."
            )
    fields = {**_GPT2_DEFAULTS, **kwargs}
    if fields["n_embd"] % fields["n_head"]:
        raise ConfigError(
            f"hf_gpt2_lm n_embd {fields['n_embd']} is not a multiple of n_head "
            f"{fields['n_head']}; choose n_embd = n_head * head dimension."
        )
    # GPT-2's special ids (50256) lie outside a robench vocabulary; <eos> is robench's id 0.
    fields.setdefault("bos_token_id", 0)
    fields.setdefault("eos_token_id", 0)
    try:
        config = GPT2Config(vocab_size=vocab_size, **fields)
    except ValueError as err:
        raise ConfigError(f"hf_gpt2_lm rejected its arguments {sorted(kwargs)}: {err}.") from None
    return HFCausalLM(GPT2LMHeadModel(config), max_length=config.n_positions)
