"""The language-modeling task: window scoring, perplexity metrics, intervals and paired gates."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from robench.data.text import TextCorpus, Vocabulary, collate_windows
from robench.data.text.windows import LanguageModelingWindows
from robench.results.stats.metrics import METRICS
from robench.results.stats.ratio_statistics import RatioOfSums
from robench.tasks import load_task


class Uniform(nn.Module):
    """Equal logits for every token: perplexity = vocabulary size."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.vocab = vocab

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return torch.zeros(*tokens.shape, self.vocab)


class Bigram(nn.Module):
    """Logits of the next token read from a table row of the current token."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.table = table

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.table[tokens]


def _windows(lines, target_length, context=0, vocabulary=None):
    corpus = TextCorpus(
        root=__import__("pathlib").Path("."),
        layout="test",
        split="test",
        lines=tuple(tuple(line) for line in lines),
        description="",
    )
    vocab = vocabulary or Vocabulary.build(corpus.lines)
    return LanguageModelingWindows(corpus, vocab, target_length=target_length, context=context)


def _records(task, model, windows):
    inputs, targets = collate_windows([windows[i] for i in range(len(windows))])
    columns = task.score(model, inputs, targets)
    names = list(columns)
    return [dict(zip(names, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def _metric(name, records):
    metric = METRICS.get(name)
    return metric.summarize([metric.per_sample(r) for r in records])


def test_uniform_logits_give_the_vocabulary_size_as_perplexity():
    lines = [["the", "cat", "sat"], ["on", "the", "mat", "."], []]
    windows = _windows(lines, target_length=3)
    task = load_task("language-modeling")
    records = _records(task, Uniform(len(windows.vocabulary)), windows)
    value, (low, high) = _metric("perplexity", records)
    assert value == pytest.approx(len(windows.vocabulary))
    assert low == pytest.approx(value) and high == pytest.approx(value)  # every window equal
    # Bits per byte: NLL log(V) per token over the scored bytes.
    tokens = sum(r["tokens"] for r in records)
    nbytes = sum(r["bytes"] for r in records)
    bpb, _ = _metric("bits_per_byte", records)
    assert bpb == pytest.approx(tokens * math.log(len(windows.vocabulary)) / nbytes / math.log(2))
    words = sum(r["words"] for r in records)
    word_ppl, _ = _metric("word_perplexity", records)
    assert word_ppl == pytest.approx(math.exp(tokens * math.log(len(windows.vocabulary)) / words))


def test_a_hand_computed_two_window_example():
    vocabulary = Vocabulary(("<eos>", "<unk>", "a", "b"))
    # Stream a b a <eos> (ids 2 3 2 0); target length 2 -> windows score positions 1-2 and 3.
    windows = _windows([["a", "b", "a"]], target_length=2, vocabulary=vocabulary)
    assert len(windows) == 2
    table = torch.log(
        torch.tensor(
            [
                [0.25, 0.25, 0.25, 0.25],  # after <eos>
                [0.25, 0.25, 0.25, 0.25],  # after <unk>
                [0.1, 0.1, 0.2, 0.6],  # after a
                [0.3, 0.1, 0.5, 0.1],  # after b
            ]
        )
    )
    task = load_task("language-modeling")
    records = _records(task, Bigram(table), windows)
    # Window 1: P(b|a) = 0.6, P(a|b) = 0.5; window 2: P(<eos>|a) = 0.1.
    assert records[0]["nll"] == pytest.approx(-math.log(0.6) - math.log(0.5))
    assert records[1]["nll"] == pytest.approx(-math.log(0.1))
    assert [r["tokens"] for r in records] == [2, 1]
    assert [r["words"] for r in records] == [2, 0]  # <eos> is not a word
    assert [r["bytes"] for r in records] == [4, 0]  # "b " and "a\n"
    value, _ = _metric("perplexity", records)
    assert value == pytest.approx(math.exp(-(math.log(0.6) + math.log(0.5) + math.log(0.1)) / 3))


def test_context_tokens_are_input_only():
    lines = [[f"w{i}" for i in range(20)]]
    task = load_task("language-modeling")
    plain = _windows(lines, target_length=5)
    with_context = _windows(lines, target_length=5, context=3, vocabulary=plain.vocabulary)
    model = Uniform(len(plain.vocabulary))
    a, b = _records(task, model, plain), _records(task, model, with_context)
    assert [r["tokens"] for r in a] == [r["tokens"] for r in b]
    assert sum(r["tokens"] for r in a) == plain.n_scored_tokens == 20  # 20 words + <eos> - 1


def test_perplexity_is_lower_is_better_with_a_paired_statistic():
    for name in ("perplexity", "word_perplexity", "bits_per_byte"):
        metric = METRICS.get(name)
        assert not metric.higher_is_better
        assert metric.task == "language-modeling" and metric.paired_test == "statistic"


def test_bootstrap_interval_covers_the_value_and_is_seeded():
    rng = np.random.default_rng(1)
    tokens = rng.integers(50, 256, size=200)
    nll = tokens * rng.normal(3.0, 0.3, size=200)
    pairs = np.stack([nll, tokens], axis=1)
    ppl = RatioOfSums(np.exp)
    value = ppl(pairs)
    low, high = ppl.interval(pairs)
    assert low < value < high
    assert value == pytest.approx(math.exp(nll.sum() / tokens.sum()))
    assert ppl.interval(pairs) == (low, high)


def test_paired_bootstrap_detects_a_worse_candidate_and_not_an_identical_one():
    rng = np.random.default_rng(2)
    tokens = rng.integers(100, 256, size=150).astype(float)
    base_nll = tokens * rng.normal(3.0, 0.2, size=150)
    base = np.stack([base_nll, tokens], axis=1)
    worse = np.stack([base_nll + tokens * 0.1, tokens], axis=1)  # +0.1 nats per token
    ppl = RatioOfSums(np.exp)
    diff, (low, _), p_worse, _ = ppl.paired(base, worse, 2000, 0, "greater")
    assert diff == pytest.approx(ppl(worse) - ppl(base)) and diff > 0
    assert low > 0 and p_worse < 0.01
    diff, _, p_same, _ = ppl.paired(base, base, 2000, 0, "greater")
    assert diff == 0 and p_same == 1.0
