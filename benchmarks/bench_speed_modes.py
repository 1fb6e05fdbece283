"""Speed modes of `robench eval` side by side: float32, --amp bf16, --amp fp16, --channels-last.

Run from the repository root:

    .venv/bin/python benchmarks/bench_speed_modes.py            # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_speed_modes.py --quick --output /tmp/s.md

Clean evaluation of the shipped `vit_nano_fmnist` on the same seeded Fashion-MNIST test
images and batch size, every mode through `robench.evaluation.request.evaluate` in one
process: one untimed warm-up of each, then rounds whose order alternates (float32, bf16, ...,
then the reverse: ABBA for any number of modes). Reported per mode: the median seconds of the
whole run and of the runner's batch loop (the clean result's `wall_time_s`), the throughput
relative to float32 (median of per-round ratios, batch loop) and the clean top-1.
`--compile` adds torch.compile (its compilation is paid in the warm-up, on CPU tens of
seconds). The modes are meant for GPUs; on a CPU none of them need be faster, and the GPU
rows read "not measured" unless this machine has a CUDA GPU. The section between the
`bench_speed_modes` markers of the output file is replaced, or appended when absent.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import tempfile
from pathlib import Path

import torch
from report_sections import cpu_name, load_average, write_section

from robench.evaluation.request import EvalRequest, evaluate
from robench.evaluation.speed import SpeedOptions

ROOT = Path(__file__).resolve().parents[1]
MODEL = "vit_nano_fmnist"
START, END = "<!-- bench_speed_modes -->", "<!-- /bench_speed_modes -->"
SUITE = 'name = "bench-clean"\nversion = 1\nmetrics = ["top1"]\n[[perturbations]]\nkind = "clean"\n'
MODES = {
    "float32": SpeedOptions(),
    "--amp bf16": SpeedOptions(amp="bf16"),
    "--amp fp16": SpeedOptions(amp="fp16"),
    "--channels-last": SpeedOptions(channels_last=True),
}
TOP1: dict[SpeedOptions, float] = {}  # clean top-1 of each mode's last run


def _run(
    speed: SpeedOptions, device: str, limit: int, batch: int, work: Path
) -> tuple[float, float]:
    """(whole-run seconds, batch-loop seconds) of one clean evaluation; top-1 in TOP1."""
    report = evaluate(
        EvalRequest(
            suite=str(work / "clean.toml"),
            data="fashion-mnist",
            out=work / "r.json",
            model=MODEL,
            limit=limit,
            batch_size=batch,
            device=device,
            overwrite=True,
            speed=speed,
        )
    )
    TOP1[speed] = report.results[0].metrics["top1"].value
    return report.wall_time_s, report.results[0].wall_time_s


def measure(
    modes: dict[str, SpeedOptions], device: str, limit: int, batch: int, rounds: int, work: Path
) -> dict[str, dict[str, float]]:
    (work / "clean.toml").write_text(SUITE)
    for speed in modes.values():
        _run(speed, device, limit, batch, work)  # warm-up: imports, caches, compilation
    whole: dict[str, list[float]] = {name: [] for name in modes}
    loop: dict[str, list[float]] = {name: [] for name in modes}
    ratios: dict[str, list[float]] = {name: [] for name in modes}
    for r in range(rounds):
        order = list(modes) if r % 2 == 0 else list(reversed(modes))
        seconds = {}
        for name in order:
            total, seconds[name] = _run(modes[name], device, limit, batch, work)
            whole[name].append(total)
            loop[name].append(seconds[name])
        for name in modes:
            ratios[name].append(seconds["float32"] / seconds[name])
    return {
        name: {
            "whole": statistics.median(whole[name]),
            "loop": statistics.median(loop[name]),
            "ratio": statistics.median(ratios[name]),
            "top1": TOP1[modes[name]],
        }
        for name in modes
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few images, two rounds")
    parser.add_argument("--limit", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=250)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--compile", action="store_true", help="also measure --compile")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    if args.quick:
        args.limit, args.rounds = 500, 2
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    modes = dict(MODES)
    if args.compile:
        modes["--compile"] = SpeedOptions(compile=True)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    started, before = datetime.datetime.now(datetime.timezone.utc), load_average()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for device in devices:
            results[device] = measure(
                modes, device, args.limit, args.batch_size, args.rounds, Path(tmp)
            )
            print(device, results[device])
    flags = " ".join(f for f, on in (("--quick", args.quick), ("--compile", args.compile)) if on)
    if args.threads is not None:
        flags = f"{flags} --threads {args.threads}".strip()
    lines = [
        START,
        "## Speed modes: float32 vs --amp vs --channels-last (benchmarks/bench_speed_modes.py)",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} UTC",
        f"- machine: {cpu_name()}; torch {torch.__version__}, threads {torch.get_num_threads()}"
        + (f"; GPU {torch.cuda.get_device_name()}" if "cuda" in devices else "; no GPU"),
        f"- load average (1, 5, 15 min) before: {before}; after: {load_average()}",
        f"- command: `python benchmarks/bench_speed_modes.py{' ' + flags if flags else ''}`; "
        f"clean evaluation of `{MODEL}` on {args.limit} Fashion-MNIST test images (seeded "
        f"subset), batch {args.batch_size}, {args.rounds} rounds in ABBA order after a warm-up",
        "",
        "| device | mode | run s (median) | batch loop s (median) | throughput vs float32 "
        "(batch loop) | clean top-1 |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for device in ("cpu", "cuda"):
        for name in modes:
            if device not in results:
                lines.append(f"| {device} | {name} | not measured (no GPU) | | | |")
                continue
            r = results[device][name]
            lines.append(
                f"| {device} | {name} | {r['whole']:.2f} | {r['loop']:.2f} | "
                f"{r['ratio']:.2f} | {r['top1']:.4f} |"
            )
    lines += [
        "",
        "The speed modes are meant for GPUs (tensor cores for bf16/fp16, NHWC convolutions); "
        "on a CPU without bf16 instructions autocast adds casts and may be slower, and "
        "`vit_nano_fmnist` has one convolution (its patch embedding), so channels-last "
        "changes little. Attacks run in float32 (unless a suite sets amp_attacks), so only "
        "clean and corruption passes gain from --amp here. On a shared machine (load average "
        "above the thread count) the ratios move by up to 0.15 between runs; the top-1 column "
        "is exact.",
        END,
    ]
    section = "\n".join(lines)
    print(section)
    write_section(args.output, section, START, END)


if __name__ == "__main__":
    main()
