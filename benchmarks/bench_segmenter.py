"""Forward time of Segmenter with Elliptical Attention vs standard attention, same weights.

Run from the repository root:

    .venv/bin/python benchmarks/bench_segmenter.py             # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_segmenter.py --rounds 5 --output /tmp/bench.md

Arms per model: `segmenter_{nano,tiny}_baseline` and its `*_elliptical` twin holding the same
weights (Elliptical Attention in the encoder; the mask-transformer decoder is the same). Eval
mode under `torch.inference_mode()`, after warm-up; each round runs both arms back to back in
alternating order (AB, BA, ...), so drifts of a shared machine hit both alike. We report the
median time per arm, the minimum, and the median over rounds of the per-round ratio
elliptical / baseline (target: at most 1.03).
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

import robench.models.zoo  # noqa: F401  (registers the segmenter models)

TIME_TARGET = 1.03  # elliptical / baseline
NOTES = (
    "Reading: the ops only the elliptical arm runs (per encoder layer l >= 2: V_l - V_{l-1}, "
    "abs, sum over positions, max-scaling, Q *= m, and the copy of V_l carried to the next "
    "layer) are a fixed few per layer. In segmenter_nano (64 tokens, dim 64) a torch.profiler "
    "comparison over 20 forwards put them at ~0.4 ms of ~13.5 ms (~3%), dispatch cost more "
    "than arithmetic; in segmenter_tiny (1024 tokens, dim 192) they vanish in the noise."
)
START = "<!-- bench_segmenter:start -->"
END = "<!-- bench_segmenter:end -->"


def _time(model: torch.nn.Module, x: torch.Tensor) -> float:
    start = time.perf_counter()
    model(x)
    return time.perf_counter() - start


def measure(size: str, batch: int, rounds: int, warmup: int) -> dict[str, float]:
    """Median and min ms per arm and the median per-round ratio for one model size."""
    torch.manual_seed(0)
    baseline = timm.create_model(f"segmenter_{size}_baseline").eval()
    elliptical = timm.create_model(f"segmenter_{size}_elliptical").eval()
    elliptical.load_state_dict(baseline.state_dict())
    x = torch.rand(batch, *baseline.pretrained_cfg["input_size"])
    arms = {"baseline": baseline, "elliptical": elliptical}
    times: dict[str, list[float]] = {name: [] for name in arms}
    ratios = []
    with torch.inference_mode():
        for model in arms.values():
            for _ in range(warmup):
                model(x)
        for r in range(rounds):
            order = list(arms) if r % 2 == 0 else list(reversed(arms))
            took = {name: _time(arms[name], x) for name in order}
            for name, seconds in took.items():
                times[name].append(seconds)
            ratios.append(took["elliptical"] / took["baseline"])
    out = {"ratio": statistics.median(ratios)}
    for name, values in times.items():
        out[f"{name}_median_ms"] = 1e3 * statistics.median(values)
        out[f"{name}_min_ms"] = 1e3 * min(values)
    return out


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"load average {load_average()}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds per model")
    parser.add_argument("--warmup", type=int, default=2, help="untimed forwards per arm")
    parser.add_argument("--nano-batch", type=int, default=16)
    parser.add_argument("--tiny-batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--skip-tiny", action="store_true", help="nano only (quick)")
    parser.add_argument("--note", default="", help="a sentence on the machine's state")
    parser.add_argument("--output", type=Path, default=Path("reports/benchmarks.md"))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    uptime_before = _uptime()
    settings = [("nano", args.nano_batch, "64x64")]
    if not args.skip_tiny:
        settings.append(("tiny", args.tiny_batch, "512x512"))
    rows = []
    for size, batch, pixels in settings:
        result = measure(size, batch, args.rounds, args.warmup)
        verdict = "ok" if result["ratio"] <= TIME_TARGET else "over target"
        row = (
            f"| segmenter_{size} | {pixels} | {batch} | {result['baseline_median_ms']:.1f} "
            f"({result['baseline_min_ms']:.1f}) | {result['elliptical_median_ms']:.1f} "
            f"({result['elliptical_min_ms']:.1f}) | {result['ratio']:.3f} | {verdict} |"
        )
        print(row, flush=True)
        rows.append(row)
    uptime_after = _uptime()

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        START,
        "## Segmenter forward time: Elliptical vs baseline (benchmarks/bench_segmenter.py)",
        "",
        f"{now}; {cpu_name()}, {platform.system()}, torch {torch.__version__}, timm "
        f"{timm.__version__}, {args.threads} thread(s), CPU, eval mode, inference_mode; "
        f"{args.rounds} interleaved rounds after {args.warmup} warm-up forwards per arm; same "
        "weights in both arms.",
        "",
        f"`uptime` before: `{uptime_before}`  ",
        f"`uptime` after: `{uptime_after}`",
        "",
        *([args.note, ""] if args.note else []),
        "| model | input | batch | baseline ms, median (min) | elliptical ms, median (min) "
        "| ratio (median of rounds) | target <= 1.03 |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        NOTES,
        END,
    ]
    write_section(args.output, "\n".join(lines), START, END)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
