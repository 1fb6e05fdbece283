"""Language-model evaluation speed: Elliptical vs standard attention, and robench vs a bare loop.

Run from the repository root:

    .venv/bin/python benchmarks/bench_lm.py                  # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_lm.py --quick --output /tmp/lm.md
    .venv/bin/python benchmarks/bench_lm.py --threads 1      # one torch thread (busy machine)
    .venv/bin/python benchmarks/bench_lm.py --profile        # also cProfile one evaluate()

One process; every comparison is measured side by side, so a drifting load hits both arms:

1. Forward throughput. For `transformer_lm_nano` and `transformer_lm_small`: the standard model
   (`baseline`), its `_elliptical` twin with the default, causal `prefix` estimator of M, and
   the twin with the paper's estimator (`paper`, for reference), all loaded with the baseline's
   random weights. The same random token windows (batch x target length, ids below the
   vocabulary size) go through each arm under `torch.inference_mode()`; each round runs every
   arm once in an order rotated by one, after warm-up. Reported: tokens/s from the median time
   per batch, and the median over rounds of the per-round time ratio to `baseline` (goal for
   `elliptical`: <= 1.03 on CPU).
2. Perplexity evaluation, end to end. One `transformer_lm_nano` checkpoint (random weights,
   written with its vocabulary as `robench train` does) scored on `--limit` windows of the
   Python docs' test split, target length 256, batch `--eval-batch-size`:
   - `bare`: read the checkpoint, build the model, open the windows, then a
     `torch.inference_mode()` loop over the same batches (`collate_windows`) summing the
     cross-entropy;
   - `robench`: `robench.evaluation.request.evaluate` with a clean-only suite (same checkpoint,
     data, limit, seed and batch size), report and per-sample file written.
   Both wall times include everything (nothing subtracted); rounds alternate
   in ABBA order (bare, robench, robench, bare, ...) after one untimed warm-up of each
   (imports, file caches). Reported: median seconds, tokens/s
   and the median over rounds of the per-round throughput ratio robench / bare (goal: >= 0.95),
   and the two perplexities (they must agree).

The section between the `bench_lm` markers of the output file is replaced, or appended when
absent; the rest of the file is kept.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import math
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from report_sections import cpu_name, load_average, write_section
from safetensors import safe_open
from torch import nn

from robench._core.errors import DataError
from robench.data.subset import select_indices
from robench.data.text import (
    Vocabulary,
    collate_windows,
    open_text_dataset,
    read_corpus,
    training_lines,
)
from robench.evaluation.request import EvalRequest, evaluate
from robench.models.checkpoints import save_safetensors
from robench.models.spec import ModelSpec, metadata_from_spec
from robench.models.zoo.lm_registry import create_language_model

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench_lm -->", "<!-- /bench_lm -->"
FORWARD_GOAL = 1.03  # elliptical (prefix) / baseline time per batch, CPU
EVAL_GOAL = 0.95  # robench / bare throughput
VOCAB_SIZE = 10_000  # the vocabulary's cap, and its size when the Python docs are missing
TARGET_LENGTH = 256
SIZES = ("transformer_lm_nano", "transformer_lm_small")
# Arm name -> (suffix of the registered name, model overrides).
ARMS: dict[str, tuple[str, dict[str, str]]] = {
    "baseline": ("", {}),
    "elliptical": ("_elliptical", {}),  # m_estimator "prefix", the default
    "paper": ("_elliptical", {"m_estimator": "paper"}),
}
CLEAN_SUITE = """name = "bench-lm-clean"
version = 1
task = "language-modeling"
description = "benchmarks/bench_lm.py: clean perplexity only"
metrics = ["perplexity"]

[data_options]
target_length = {target_length}

[[perturbations]]
kind = "clean"
"""


@dataclass
class Arm:
    name: str
    model: nn.Module
    times: list[float] = field(default_factory=list)


def corpus_and_vocabulary() -> tuple[str, Vocabulary]:
    """The Python docs (or, when not installed, the pydoc topics) and a vocabulary of at most
    VOCAB_SIZE words built from their train split as `robench train` does (min count 3)."""
    for corpus in ("python-docs", "pydoc-topics"):
        try:
            read_corpus(corpus, "test", None)
        except DataError as err:  # the built-in corpus is not installed: try the next
            print(f"{corpus} not available ({err}); trying the next corpus", file=sys.stderr)
            continue
        vocabulary = Vocabulary.build(training_lines(corpus), min_count=3, max_size=VOCAB_SIZE)
        return corpus, vocabulary
    raise SystemExit("neither python-docs nor pydoc-topics is available")


# --- 1. forward throughput -------------------------------------------------------------------


def build_arms(size: str, vocab_size: int) -> list[Arm]:
    torch.manual_seed(0)
    arms = []
    state: dict[str, torch.Tensor] | None = None
    for name, (suffix, overrides) in ARMS.items():
        model = create_language_model(size + suffix, vocab_size=vocab_size, **overrides).eval()
        if state is None:
            state = model.state_dict()
        else:
            model.load_state_dict(state, strict=True)
        arms.append(Arm(name, model))
    return arms


def _time_forward(model: nn.Module, tokens: torch.Tensor) -> float:
    started = time.perf_counter()
    with torch.inference_mode():
        model(tokens)
    return time.perf_counter() - started


def measure_forward(arms: list[Arm], tokens: torch.Tensor, rounds: int, warmup: int) -> None:
    for arm in arms:
        for _ in range(warmup):
            _time_forward(arm.model, tokens)
    for r in range(rounds):
        shift = r % len(arms)
        for arm in arms[shift:] + arms[:shift]:  # rotated interleaving: ABC, BCA, CAB, ...
            arm.times.append(_time_forward(arm.model, tokens))


def _paired(times: list[float], base: list[float]) -> float:
    return statistics.median(t / b for t, b in zip(times, base, strict=True))


# --- 2. robench's evaluate() against a bare loop ---------------------------------------------


@dataclass
class EvalSetup:
    checkpoint: Path
    suite: Path
    out_dir: Path
    corpus: str
    architecture: str
    split: str
    limit: int | None  # None: every window of the split
    batch_size: int


def write_inputs(
    directory: Path, corpus: str, vocabulary: Vocabulary, args: argparse.Namespace
) -> EvalSetup:
    """A random-weights checkpoint with its vocabulary, and the clean-only suite."""
    torch.manual_seed(0)
    model = create_language_model(args.eval_model, vocab_size=len(vocabulary))
    checkpoint = directory / f"{args.eval_model}.safetensors"
    metadata = metadata_from_spec(ModelSpec(architecture=args.eval_model))
    save_safetensors(model.state_dict(), checkpoint, metadata | vocabulary.to_metadata())
    suite = directory / "bench-lm-clean.toml"
    suite.write_text(CLEAN_SUITE.format(target_length=TARGET_LENGTH))
    return EvalSetup(
        checkpoint,
        suite,
        directory,
        corpus,
        args.eval_model,
        args.split,
        args.limit,
        args.eval_batch_size,
    )


def run_bare(setup: EvalSetup, limit: int | None) -> dict[str, float]:
    """Checkpoint file -> perplexity with nothing but torch: the floor robench is held to."""
    started = time.perf_counter()
    with safe_open(str(setup.checkpoint), framework="pt") as f:
        metadata = f.metadata()
        state = {key: f.get_tensor(key) for key in f.keys()}  # noqa: SIM118 (not a dict)
    vocabulary = Vocabulary.from_metadata(metadata)
    assert vocabulary is not None
    model = create_language_model(setup.architecture, vocab_size=len(vocabulary))
    model.load_state_dict(state)
    model.eval()
    windows = open_text_dataset(
        setup.corpus, vocabulary, split=setup.split, target_length=TARGET_LENGTH
    )
    indices = select_indices(len(windows), limit, 0)  # the windows evaluate() picks (seed 0)
    loop_started = time.perf_counter()
    nll, tokens = 0.0, 0
    with torch.inference_mode():
        for i in range(0, len(indices), setup.batch_size):
            inputs, targets = collate_windows(
                [windows[k] for k in indices[i : i + setup.batch_size]]
            )
            logits = model(inputs)  # (B, T, V)
            nll += float(
                nn.functional.cross_entropy(
                    logits.flatten(0, 1), targets[:, 0].flatten(), ignore_index=-100,
                    reduction="sum",
                )
            )  # fmt: skip
            tokens += int((targets[:, 0] != -100).sum())
    ended = time.perf_counter()
    return {
        "seconds": ended - started,
        "loop_seconds": ended - loop_started,
        "tokens": tokens,
        "perplexity": math.exp(nll / tokens),
    }


def run_robench(setup: EvalSetup, limit: int | None, tag: str) -> dict[str, float]:
    """The same job through `evaluate()`: suite, model loading, checks, store, report."""
    request = EvalRequest(
        suite=str(setup.suite),
        data=setup.corpus,
        out=setup.out_dir / f"report-{tag}.json",
        checkpoint=setup.checkpoint,
        split=setup.split,
        limit=limit,
        batch_size=setup.batch_size,
        overwrite=True,
    )
    started = time.perf_counter()
    report = evaluate(request)
    seconds = time.perf_counter() - started
    result = report.results[0]
    tokens = sum(report.samples[result.dataset].targets)
    return {
        "seconds": seconds,
        "loop_seconds": result.wall_time_s,
        "tokens": tokens,
        "perplexity": result.metrics["perplexity"].value,
    }


def measure_eval(setup: EvalSetup, rounds: int) -> dict[str, list[dict[str, float]]]:
    runs: dict[str, list[dict[str, float]]] = {"bare": [], "robench": []}
    run_bare(setup, setup.batch_size)  # warm-up: imports, file caches, thread pools
    run_robench(setup, setup.batch_size, "warmup")
    for r in range(rounds):
        sides = ["bare", "robench"] if r % 2 == 0 else ["robench", "bare"]  # ABBA order
        for side in sides:
            run = run_bare(setup, setup.limit) if side == "bare" else None
            runs[side].append(run or run_robench(setup, setup.limit, str(r)))
        done = [f"{side} {runs[side][-1]['seconds']:.1f} s" for side in sides]
        print(f"round {r + 1}/{rounds}: {', '.join(done)}", file=sys.stderr)
    return runs


def profile_robench(setup: EvalSetup, top: int = 25) -> str:
    """cProfile of one evaluate(): the top functions by cumulative and by own time."""
    profiler = cProfile.Profile()
    profiler.runcall(run_robench, setup, setup.limit, "profile")
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


# --- report ----------------------------------------------------------------------------------


def _machine() -> str:
    cpu = cpu_name()
    return (
        f"{cpu}; nproc {os.cpu_count()}; torch {torch.__version__}, torch threads "
        f"{torch.get_num_threads()}; Python {platform.python_version()}"
    )


def _verdict(met: bool) -> str:
    return "pass" if met else "FAIL"


def render_forward(forward: dict[str, list[Arm]], batch: int, rounds: int) -> list[str]:
    tokens = batch * TARGET_LENGTH
    lines = [
        f"### Forward throughput ({batch} windows x {TARGET_LENGTH} tokens, {rounds} rounds)",
        "",
        "| model | arm | median ms / batch | tokens/s | time ratio to baseline "
        "(median of per-round ratios) | min ms | ratio of minima | goal (<= "
        f"{FORWARD_GOAL}) |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for size, arms in forward.items():
        base = arms[0].times
        for arm in arms:
            median = statistics.median(arm.times)
            ratio = _paired(arm.times, base)
            goal = _verdict(ratio <= FORWARD_GOAL) if arm.name == "elliptical" else ""
            lines.append(
                f"| `{size}` | {arm.name} | {median * 1e3:.1f} | {tokens / median:,.0f} "
                f"| {ratio:.3f} | {min(arm.times) * 1e3:.1f} | {min(arm.times) / min(base):.3f} "
                f"| {goal} |"
            )
    return lines


def render_eval(runs: dict[str, list[dict[str, float]]], setup: EvalSetup) -> list[str]:
    bare, rob = runs["bare"], runs["robench"]
    windows = "every window" if setup.limit is None else f"{setup.limit} windows (seed 0)"
    ratio = statistics.median(b["seconds"] / r["seconds"] for b, r in zip(bare, rob, strict=True))
    lines = [
        f"### Perplexity evaluation: robench `evaluate()` vs a bare loop ({len(bare)} rounds)",
        "",
        f"`{setup.architecture}` (random weights), `{setup.corpus}` {setup.split} split, "
        f"{windows} of {TARGET_LENGTH} tokens, batch {setup.batch_size}.",
        "",
        "| side | median wall s (all included) | median s in the scoring loop | tokens "
        "| tokens/s | perplexity |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, side in runs.items():
        seconds = statistics.median(run["seconds"] for run in side)
        loop = statistics.median(run["loop_seconds"] for run in side)
        tokens = side[0]["tokens"]
        lines.append(
            f"| {name} | {seconds:.2f} | {loop:.2f} | {tokens:,.0f} | {tokens / seconds:,.0f} "
            f"| {side[0]['perplexity']:.4f} |"
        )
    agree = math.isclose(bare[0]["perplexity"], rob[0]["perplexity"], rel_tol=1e-4)
    lines += [
        "",
        f"- throughput ratio robench / bare (median of per-round ratios): {ratio:.3f}; goal "
        f">= {EVAL_GOAL}: {_verdict(ratio >= EVAL_GOAL)}",
        f"- perplexities agree (relative tolerance 1e-4): {'yes' if agree else 'NO'}",
        "- scoring loop: bare, the batches loop alone; robench, the clean result's "
        "`wall_time_s` (the runner's loop: batches, scoring, sample store)",
    ]
    return lines


def render(
    args: argparse.Namespace,
    forward: dict[str, list[Arm]],
    runs: dict[str, list[dict[str, float]]],
    setup: EvalSetup,
    vocab_size: int,
    loads: tuple[str, str],
) -> str:
    command = "python benchmarks/bench_lm.py" + (" --quick" if args.quick else "")
    if args.threads is not None:
        command += f" --threads {args.threads}"
    lines = [
        START,
        "## Language-model evaluation speed (benchmarks/bench_lm.py)",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {_machine()}",
        f"- load average (1, 5, 15 min) before: {loads[0]}; after: {loads[1]}",
        f"- command: `{command}`; vocabulary {vocab_size:,} words ({setup.corpus} train, "
        f"min count 3, at most {VOCAB_SIZE:,})",
        f"- goals: elliptical (prefix estimator) forward time <= {FORWARD_GOAL} x baseline on "
        f"CPU; robench perplexity evaluation throughput >= {EVAL_GOAL} x a bare "
        "`torch.inference_mode()` loop",
        "- forward: eval mode, `torch.inference_mode()`, the same random token ids for every "
        "arm, arms interleaved in rotated order after warm-up; elliptical twins carry the "
        "baseline's weights; `paper` = the paper's estimator of M (mean over all positions, "
        "not causal), for reference",
        "",
        *render_forward(forward, args.batch, args.rounds),
        "",
        *render_eval(runs, setup),
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds, few windows")
    parser.add_argument("--batch", type=int, default=8, help="windows per forward batch (1.)")
    parser.add_argument("--rounds", type=int, help="forward rounds (default 20, quick 2)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed forwards per arm")
    parser.add_argument("--eval-model", default="transformer_lm_nano")
    parser.add_argument("--split", default="test", help="split evaluated in 2. (default test)")
    parser.add_argument("--limit", type=int, help="windows evaluated (default all, quick 16)")
    parser.add_argument("--eval-batch-size", type=int, default=8)
    parser.add_argument("--eval-rounds", type=int, help="bare/robench pairs (default 5, quick 1)")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--profile", action="store_true", help="cProfile one evaluate()")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    if args.rounds is None:
        args.rounds = 2 if args.quick else 20
    if args.limit is None and args.quick:
        args.limit = 16
    if args.eval_rounds is None:
        args.eval_rounds = 1 if args.quick else 5

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    before = load_average()
    corpus, vocabulary = corpus_and_vocabulary()
    vocab_size = len(vocabulary) if corpus == "python-docs" else VOCAB_SIZE
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab_size, (args.batch, TARGET_LENGTH), generator=generator)
    forward = {}
    for size in SIZES:
        arms = build_arms(size, vocab_size)
        measure_forward(arms, tokens, args.rounds, args.warmup)
        forward[size] = arms
        print(f"forward {size}: done", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="bench_lm_") as tmp:
        setup = write_inputs(Path(tmp), corpus, vocabulary, args)
        runs = measure_eval(setup, args.eval_rounds)
        if args.profile:
            print(profile_robench(setup), file=sys.stderr)
    section = render(args, forward, runs, setup, vocab_size, (before, load_average()))
    print(section)
    write_section(args.output, section, START, END)


if __name__ == "__main__":
    main()
