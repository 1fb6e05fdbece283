"""Perplexity of a transformers causal LM: `robench eval` against lm-evaluation-harness.

Run from the repository root (lm-eval is the test extra: `pip install -e '.[lmeval]'`):

    .venv/bin/python benchmarks/bench_lm_eval.py            # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_lm_eval.py --quick --output /tmp/lm.md

Both sides are whole commands, started as subprocesses with the same environment (offline,
same torch threads), on the same model folder (the shipped `models/gpt2_bpe_pydocs`), the
same documents (the first `--documents` files of the Python-docs test split, as a JSON-lines
file), the same device and the same batch size:

- robench: `robench eval hf:MODEL -s SUITE --data DOCS.jsonl -b B` (a clean-only suite with
  word perplexity, byte perplexity and bits per byte);
- lm-eval: `lm_eval --model hf --model_args pretrained=MODEL --tasks robench_bench
  --include_path DIR --batch_size B` (a local JSON `loglikelihood_rolling` task).

The batch size is B rolling windows per forward for lm-eval and B documents per batch for
robench (whose forwards take every window of those documents, up to its logits bound).
Rounds alternate the order (ABBA) after one untimed warm-up of each; reported are the median
seconds per side and the median over rounds of the per-round throughput ratio robench /
lm-eval (documents per second), with the numbers each side printed, which must agree.
The section between the `bench_lm_eval` markers of the output file is replaced or appended.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lm_eval_task import METRICS, write_task
from report_sections import cpu_name, load_average, write_section

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
START, END = "<!-- bench_lm_eval -->", "<!-- /bench_lm_eval -->"
SUITE = """name = "bench-lm-eval"
version = 1
task = "language-modeling"
description = "Clean word/byte perplexity and bits per byte (bench_lm_eval)"
metrics = ["word_perplexity", "byte_perplexity", "bits_per_byte"]

[[perturbations]]
kind = "clean"
"""


def prepare(work: Path, documents: int) -> tuple[Path, Path, Path]:
    """The documents (JSON lines), the robench suite and lm-eval's task directory."""
    from robench.data.text.documents import read_documents

    texts = read_documents("python-docs", "test").texts[:documents]
    data = work / "docs.jsonl"
    data.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    suite = work / "suite.toml"
    suite.write_text(SUITE)
    tasks = work / "tasks"
    write_task(tasks, "robench_bench", data)
    return data, suite, tasks


def commands(model: Path, work: Path, args: argparse.Namespace) -> dict[str, list[str]]:
    data, suite, tasks = prepare(work, args.documents)
    b = str(args.batch_size)
    robench = [str(BIN / "robench"), "eval", f"hf:{model}", "-s", str(suite), "--data"]
    robench += [str(data), "-b", b, "--device", args.device, "--overwrite"]
    robench += ["-o", str(work / "robench.json")]
    lm_eval = [str(BIN / "lm_eval"), "--model", "hf", "--model_args", f"pretrained={model}"]
    lm_eval += ["--tasks", "robench_bench", "--include_path", str(tasks), "--batch_size", b]
    lm_eval += ["--device", args.device, "--output_path", str(work / "lm_eval")]
    return {"robench": robench, "lm-eval": lm_eval}


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def numbers(work: Path) -> dict[str, dict[str, float]]:
    """The metrics each side wrote on its last run."""
    report = json.loads((work / "robench.json").read_text())
    clean = next(r for r in report["results"] if r["name"] == "clean")["metrics"]
    ours = {m: clean[m]["value"] for m in METRICS}
    written = max((work / "lm_eval").rglob("results_*.json"), key=lambda p: p.stat().st_mtime)
    row = json.loads(written.read_text())["results"]["robench_bench"]
    return {"robench": ours, "lm-eval": {m: row[f"{m},none"] for m in METRICS}}


def measure(args: argparse.Namespace, model: Path, work: Path) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env["HF_DATASETS_CACHE"] = str(work / "datasets-cache")
    runs = commands(model, work, args)
    for command in runs.values():  # warm-up: page cache, the datasets cache
        timed(command, env)
    seconds: dict[str, list[float]] = {side: [] for side in runs}
    for round_number in range(args.rounds):
        order = list(runs) if round_number % 2 == 0 else list(runs)[::-1]
        for side in order:
            seconds[side].append(timed(runs[side], env))
    ratios = [
        theirs / ours for ours, theirs in zip(seconds["robench"], seconds["lm-eval"], strict=True)
    ]
    return {"seconds": seconds, "ratios": ratios, "numbers": numbers(work)}


def section(args: argparse.Namespace, model: Path, result: dict) -> str:
    seconds, ratios, found = result["seconds"], result["ratios"], result["numbers"]
    ours, theirs = found["robench"], found["lm-eval"]
    worst = max(abs(ours[m] / theirs[m] - 1) for m in METRICS)
    lines = [
        START,
        "## Language-model perplexity: robench vs lm-evaluation-harness "
        "(benchmarks/bench_lm_eval.py)",
        "",
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {cpu_name()}, "
        f"{os.cpu_count()} cores, load average {load_average()} (`uptime`), device "
        f"{args.device}. Model `{model.relative_to(ROOT) if model.is_relative_to(ROOT) else model}`"
        f", the first {args.documents} documents of the Python-docs test split, batch size "
        f"{args.batch_size}, {args.rounds} interleaved rounds (ABBA) after a warm-up; whole "
        "commands, start-up included.",
        "",
        "| Side | Median seconds | Rounds (s) |",
        "|---|---|---|",
    ]
    for side, values in seconds.items():
        rounds = ", ".join(f"{v:.1f}" for v in values)
        lines.append(f"| {side} | {statistics.median(values):.2f} | {rounds} |")
    lines += [
        "",
        f"Throughput ratio robench / lm-eval: median **{statistics.median(ratios):.2f}x** "
        f"(rounds {', '.join(f'{r:.2f}' for r in ratios)}; goal at least 1.0x, aim 1.5x).",
        f"Same numbers: word perplexity {ours['word_perplexity']:.6g} vs "
        f"{theirs['word_perplexity']:.6g}, bits per byte {ours['bits_per_byte']:.6f} vs "
        f"{theirs['bits_per_byte']:.6f}; largest relative difference {worst:.1e}.",
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "gpt2_bpe_pydocs")
    parser.add_argument("--documents", type=int, default=19)  # the whole test split
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="8 documents, 2 rounds")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    if args.quick:
        args.documents, args.rounds = 8, 2
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(args, args.model.resolve(), Path(tmp))
    text = section(args, args.model.resolve(), result)
    print(text)
    write_section(args.output, text, START, END)


if __name__ == "__main__":
    main()
