"""Language modelling: token ids -> next-token logits, scored by the log-likelihood of text.

A sample is one evaluation window of a word-level model's token stream (data/text/windows.py:
inputs (T,), target rows (3, T): target id or -100, is-a-word, UTF-8 bytes), or one document
of a model with its own tokenizer (data/text/rolling_windows.py: its windows (W, T), targets
(W, 3, T)). The record, `{"nll", "tokens", "words", "bytes"}`, and the metrics that are ratios
of its sums: docs/formats.md, `samples`, and docs/language-models.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn
from torch.utils.data import Dataset

from robench._core.errors import ConfigError, DataError
from robench.data.in_memory import InMemory
from robench.data.text.rolling_windows import DocumentWindows, collate_documents
from robench.data.text.windows import IGNORE_INDEX, LanguageModelingWindows, collate_windows
from robench.tasks.base import Columns, DataRequest, ModelCheck, Record, Task
from robench.tasks.finite_values import require_finite
from robench.tasks.token_inputs import TokenInputs

if TYPE_CHECKING:
    from robench.models.loading import LoadedModel

# Logit elements scored at once: bounds the float32 log-softmax copy to ~256 MiB.
_SCORE_CHUNK_ELEMENTS = 1 << 26
# A corpus whose scored tokens are mostly <unk> was not written in the model's vocabulary.
_MAX_OOV_RATE = 0.5
_WARN_OOV_RATE = 0.1


def window_nll(logits: torch.Tensor, target_ids: torch.Tensor) -> torch.Tensor:
    """Summed negative log-likelihood (float64, nats) of the scored targets of each window:
    logits (B, T, V), target ids (B, T) with IGNORE_INDEX (-100) where not scored -> (B,)."""
    per_token = nn.functional.cross_entropy(
        logits.float().flatten(0, 1),
        target_ids.flatten(),
        ignore_index=IGNORE_INDEX,
        reduction="none",
    )
    return per_token.view(target_ids.shape).double().sum(dim=1)


def _oov_rate(dataset: Any) -> float:
    """Share of the scored words that the vocabulary does not hold (read as <unk>)."""
    scored = getattr(dataset, "n_scored_tokens", 0)
    return getattr(dataset, "n_out_of_vocabulary", 0) / scored if scored else 0.0


class LanguageModeling(TokenInputs, Task):
    name = "language-modeling"
    sanity_battery: ClassVar[bool] = False
    default_data: ClassVar[str] = "python-docs"
    # Word-level windows (target_length, context) and the JSON-lines key of the text.
    data_options: ClassVar[dict[str, Any]] = {
        "target_length": 256,
        "context": 0,
        "text_field": "text",
    }
    logits: ClassVar[tuple[int, str]] = (3, "(batch, tokens, vocabulary)")
    classifies: ClassVar[bool] = False
    token_row: ClassVar[str] = "window"

    class_map_refusal: ClassVar[str | None] = (
        "--class-map maps image classes; a language model's vocabulary comes with its "
        "checkpoint. Leave --class-map out."
    )

    def read_data(self, path: str | InMemory, model: LoadedModel, request: DataRequest) -> Any:
        from robench.data.text import open_text_dataset

        split, layout = request.split, request.layout
        settings = {**self.data_options, **request.options}
        if model.tokenizer is not None:
            return _open_documents(path, model, split, layout, settings["text_field"])
        if model.vocabulary is None:
            raise ConfigError(
                f"{model.name} carries no vocabulary, so robench cannot turn text into its token "
                "ids; pass a checkpoint written by `robench train`, or save your model's weights "
                "with its vocabulary in the checkpoint metadata (docs/language-models.md)."
            )
        if isinstance(path, InMemory):  # texts held in memory (robench.evaluate)
            from robench.data.text.in_memory import corpus
            from robench.data.text.windows import check_window_sizes

            check_window_sizes(settings["target_length"], settings["context"])
            return LanguageModelingWindows(
                corpus(path),
                model.vocabulary,
                target_length=settings["target_length"],
                context=settings["context"],
            )
        return open_text_dataset(
            path,
            model.vocabulary,
            split=split,
            target_length=settings["target_length"],
            context=settings["context"],
            layout=layout,
            text_field=settings["text_field"],
        )

    def collate(self, dataset: Dataset) -> Callable[[list[Any]], Any]:
        return collate_documents if isinstance(dataset, DocumentWindows) else collate_windows

    def score(self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> Columns:
        if inputs.dim() == 3:  # documents (B, W, T): their rolling windows
            return score_documents(model, inputs, targets)
        batch, length = inputs.shape
        nll: list[torch.Tensor] = []  # on the device: read once for the batch, not per chunk
        done = 0
        # Windows per forward, bounding the logits held at once (B x T x V floats) for large
        # vocabularies; robench's models say V, another model is probed on one window first.
        vocab = getattr(model, "vocab_size", None)
        step = max(1, _SCORE_CHUNK_ELEMENTS // (length * vocab)) if vocab else 1
        with torch.no_grad():
            while done < batch:
                chunk = slice(done, min(done + step, batch))
                logits = model(inputs[chunk])
                nll.append(window_nll(logits, targets[chunk, 0]))
                done = chunk.stop
                step = max(1, _SCORE_CHUNK_ELEMENTS // (length * logits.shape[-1]))
        require_finite(torch.cat(nll), "losses")
        scored = targets[:, 0] != IGNORE_INDEX
        return _window_columns(torch.cat(nll), scored.sum(dim=1), targets[:, 1:3].sum(dim=-1))

    def target(self, record: Record) -> Any:
        return record["tokens"]

    def outputs(self, record: Record) -> dict[str, Any]:
        return {}  # the metric columns keep each window's NLL and counts

    def check_data(
        self, dataset: Dataset, model: nn.Module, inputs: torch.Tensor, *, mapped: bool
    ) -> None:
        """The model's output size is the checkpoint vocabulary's; the text is mostly in it."""
        vocabulary = getattr(dataset, "vocabulary", None)
        with torch.no_grad():
            n_outputs = model(_windows(inputs)[:1, :8]).shape[-1]
        if vocabulary is not None and len(vocabulary) != n_outputs:
            raise DataError(
                f"the checkpoint's vocabulary has {len(vocabulary)} words but the model predicts "
                f"{n_outputs} tokens; the vocabulary and the weights must come from the same "
                "training run."
            )
        oov_rate = _oov_rate(dataset)
        if oov_rate > _MAX_OOV_RATE:
            raise DataError(
                f"{oov_rate:.0%} of the scored tokens of {getattr(dataset, 'root', 'the data')} "
                "are out of the checkpoint's vocabulary (<unk>): the data is not in the "
                "language the model was trained on; evaluate it on text like its training "
                "corpus, or train a model on this corpus."
            )

    def check_model(
        self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, *, gradients: bool
    ) -> ModelCheck:
        from robench.models.checks import train_mode_warnings

        warnings = train_mode_warnings(model)
        inputs = _windows(inputs)
        with torch.no_grad():
            first, second = model(inputs[:2]), model(inputs[:2])
        if first.shape[:2] != inputs[:2].shape:
            raise ConfigError(
                f"the language model returned outputs of shape {tuple(first.shape)} for token "
                f"ids of shape {tuple(inputs[:2].shape)}; it must return logits (B, T, "
                "vocabulary) (docs/language-models.md)."
            )
        randomized = not torch.equal(first, second)
        if randomized:
            warnings.append(
                "the model is randomized (two forward passes on the same input differ); its "
                "perplexity varies from run to run."
            )
        if not torch.isfinite(first).all():
            warnings.append("the model's logits are not all finite; perplexities may be inf.")
        sums = first.sum(dim=-1)
        if first.min() >= 0 and torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
            warnings.append(
                "the model's outputs look like probabilities (rows sum to 1); robench expects "
                "logits and applies log-softmax itself: remove the final softmax."
            )
        return ModelCheck(randomized=randomized, warnings=warnings)

    def adaptation_note(self, dataset: Dataset, model_inputs: Any) -> str | None:
        oov_rate = _oov_rate(dataset)
        if oov_rate > _WARN_OOV_RATE:
            return (
                f"{oov_rate:.1%} of the scored tokens are out of the checkpoint's vocabulary "
                "and read as <unk>; perplexities on this text are not comparable with those on "
                "the training corpus."
            )
        return None


def _windows(inputs: torch.Tensor) -> torch.Tensor:
    """A batch's windows as (n, T): documents' (B, W, T) flattened, word-level (B, T) as is."""
    return inputs.flatten(0, 1) if inputs.dim() == 3 else inputs


def _open_documents(
    path: str | InMemory, model: LoadedModel, split: str, layout: str | None, text_field: str
) -> DocumentWindows:
    """The documents of `path` (or of texts in memory), tokenized by the model's tokenizer,
    windows of its length."""
    from robench.data.text.documents import read_documents
    from robench.data.text.in_memory import documents

    assert model.max_length is not None  # set with the tokenizer (models/sources/hf_causal_lm.py)
    if isinstance(path, InMemory):
        corpus = documents(path)
    else:
        corpus = read_documents(path, split, layout, text_field)
    return DocumentWindows(corpus, model.tokenizer, model.max_length)


def score_documents(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> Columns:
    """Records of documents (B, W, T) with targets (B, W, 3, T): every non-empty window run
    once, longest first and cut to its chunk's longest (as lm-eval batches its windows), each
    document's NLL the sum of its windows'."""
    batch, n_windows, length = inputs.shape
    flat_inputs, flat_targets = inputs.flatten(0, 1), targets.flatten(0, 1)  # (BW, T), (BW, 3, T)
    scored = flat_targets[:, 0] != IGNORE_INDEX  # (BW, T)
    # A window's real length: up to its last scored position (padding comes after).
    lengths = torch.where(scored.any(1), length - scored.flip(1).int().argmax(1), 0)
    # Read by the host once: the chunks' rows and lengths slice the windows.
    host_lengths = lengths.tolist()
    ranked = torch.argsort(lengths, descending=True, stable=True).tolist()
    order = [i for i in ranked if host_lengths[i]]
    nll = torch.zeros(batch * n_windows, dtype=torch.float64, device=inputs.device)
    vocab = getattr(model, "vocab_size", None)
    done = 0
    with torch.no_grad():
        while done < len(order):
            longest = host_lengths[order[done]]
            step = max(1, _SCORE_CHUNK_ELEMENTS // (longest * vocab)) if vocab else 1
            rows = torch.tensor(order[done : done + step], device=inputs.device)
            logits = model(flat_inputs[rows, :longest])
            nll[rows] = window_nll(logits, flat_targets[rows, 0, :longest])
            vocab, done = logits.shape[-1], done + len(rows)
    require_finite(nll.view(batch, n_windows), "losses")
    return _window_columns(
        nll.view(batch, n_windows).sum(dim=1),
        scored.view(batch, -1).sum(dim=1),
        targets[:, :, 1:3].sum(dim=(1, 3)),
    )


def _window_columns(nll: torch.Tensor, tokens: torch.Tensor, counts: torch.Tensor) -> Columns:
    """The records of a batch from its (B,) NLLs, (B,) scored tokens and (B, 2) words and
    bytes, read from the device in two transfers."""
    tokens_words_bytes = torch.cat([tokens[:, None], counts], dim=1).tolist()
    return {
        "nll": nll.tolist(),
        "tokens": [row[0] for row in tokens_words_bytes],
        "words": [row[1] for row in tokens_words_bytes],
        "bytes": [row[2] for row in tokens_words_bytes],
    }
