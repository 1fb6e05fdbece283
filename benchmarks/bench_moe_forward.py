"""Forward time of the mixture-of-experts language models with Elliptical Attention vs standard
attention, same weights, on CPU.

Run from the repository root:

    .venv/bin/python benchmarks/bench_moe_forward.py            # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_moe_forward.py --rounds 5 --output /tmp/bench.md
    .venv/bin/python benchmarks/bench_moe_forward.py --sizes nano small

Arms per model: `switch_lm_SIZE` / `glam_lm_SIZE` and its `*_elliptical` twin (causal "prefix"
estimator of M, the default) holding the same weights. The same random token ids (batch x
length, below the vocabulary size) go through both arms in eval mode under
`torch.inference_mode()`, after warm-up; each round runs both arms back to back in alternating
order (AB, BA, ...), so drifts of a shared machine hit both alike. Reported: the median and
minimum time per arm and the median over rounds of the per-round ratio elliptical / baseline
(target: at most 1.03). Routing is deterministic, but the two arms route tokens differently
after the first elliptical layer, so the experts' shares of the work differ a little.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import subprocess
import time
from pathlib import Path

import timm
import torch
from report_sections import cpu_name, load_average, write_section

import robench.models.zoo  # noqa: F401  (registers the language models)
from robench.models.zoo.lm_registry import create_language_model

TIME_TARGET = 1.03  # elliptical / baseline
VOCAB_SIZE = 8000  # the shipped python-docs models' vocabulary
START = "<!-- bench_moe_forward:start -->"
END = "<!-- bench_moe_forward:end -->"


def _time(model: torch.nn.Module, tokens: torch.Tensor) -> float:
    start = time.perf_counter()
    model(tokens)
    return time.perf_counter() - start


def measure(name: str, tokens: torch.Tensor, rounds: int, warmup: int) -> dict[str, float]:
    """Median and min ms per arm and the median per-round ratio for one model."""
    torch.manual_seed(0)
    baseline = create_language_model(name, VOCAB_SIZE).eval()
    elliptical = create_language_model(f"{name}_elliptical", VOCAB_SIZE).eval()
    elliptical.load_state_dict(baseline.state_dict())
    arms = {"baseline": baseline, "elliptical": elliptical}
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    ratios = []
    with torch.inference_mode():
        for model in arms.values():
            for _ in range(warmup):
                model(tokens)
        for r in range(rounds):
            order = list(arms) if r % 2 == 0 else list(reversed(arms))
            took = {arm: _time(arms[arm], tokens) for arm in order}
            for arm, seconds in took.items():
                times[arm].append(seconds)
            ratios.append(took["elliptical"] / took["baseline"])
    out = {"ratio": statistics.median(ratios)}
    for arm, values in times.items():
        out[f"{arm}_median_ms"] = 1e3 * statistics.median(values)
        out[f"{arm}_min_ms"] = 1e3 * min(values)
    return out


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"load average {load_average()}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="interleaved rounds per model")
    parser.add_argument("--warmup", type=int, default=3, help="untimed forwards per arm")
    parser.add_argument("--sizes", nargs="+", default=["nano"], help="nano, small, medium")
    parser.add_argument("--batch", type=int, default=8, help="sequences per forward")
    parser.add_argument("--length", type=int, default=128, help="tokens per sequence")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--note", default="", help="a sentence on the machine's state")
    parser.add_argument("--output", type=Path, default=Path("reports/benchmarks.md"))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    tokens = torch.randint(
        VOCAB_SIZE, (args.batch, args.length), generator=torch.Generator().manual_seed(0)
    )

    uptime_before = _uptime()
    rows = []
    for size in args.sizes:
        for family in ("switch", "glam"):
            name = f"{family}_lm_{size}"
            result = measure(name, tokens, args.rounds, args.warmup)
            verdict = "ok" if result["ratio"] <= TIME_TARGET else "over target"
            row = (
                f"| {name} | {args.batch} x {args.length} | {result['baseline_median_ms']:.1f} "
                f"({result['baseline_min_ms']:.1f}) | {result['elliptical_median_ms']:.1f} "
                f"({result['elliptical_min_ms']:.1f}) | {result['ratio']:.3f} | {verdict} |"
            )
            print(row, flush=True)
            rows.append(row)
    uptime_after = _uptime()

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        START,
        "## Mixture-of-experts LM forward time: Elliptical vs baseline "
        "(benchmarks/bench_moe_forward.py)",
        "",
        f"{now}; {cpu_name()}, {platform.system()}, torch {torch.__version__}, timm "
        f"{timm.__version__}, {args.threads} thread(s), CPU, eval mode, inference_mode; "
        f"{args.rounds} interleaved rounds after {args.warmup} warm-up forwards per arm; same "
        f"weights in both arms; vocabulary {VOCAB_SIZE}; elliptical arm: causal prefix "
        "estimator of M.",
        "",
        f"`uptime` before: `{uptime_before}`  ",
        f"`uptime` after: `{uptime_after}`",
        "",
        *([args.note, ""] if args.note else []),
        "| model | tokens | baseline ms, median (min) | elliptical ms, median (min) "
        "| ratio (median of rounds) | target <= 1.03 |",
        "|---|---|---|---|---|---|",
        *rows,
        END,
    ]
    write_section(args.output, "\n".join(lines), START, END)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
