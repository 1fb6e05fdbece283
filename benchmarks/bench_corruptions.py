"""Corruption throughput: the library (reference) against robench's fast path, side by side.

Run from the repository root:

    .venv/bin/python benchmarks/bench_corruptions.py            # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_corruptions.py --quick --output /tmp/corruptions.md

One process, one thread per library (OpenCV, BLAS, OpenMP), the same 224 x 224 photographs
(scikit-image's sample images, resized) for both implementations. Calls alternate between the
two implementations so a drifting load hits both alike; every number is a median. Reported:
per corruption, ms per image per severity and the speed-up; the whole 15 x 5 ImageNet-C grid
per image; the cost of the first glass_blur call in a fresh process (the library compiles its
numba shuffle there; the fast path loads its cached kernel); the largest difference and the
share of differing values between the two outputs; and images/s of the fast path inside a
torch DataLoader with 0, 1 and 2 workers. The section between the `bench_corruptions` markers
of the output file is replaced, or appended when absent.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402
from report_sections import load_average, write_section  # noqa: E402

from robench.perturbations.corruptions import ALL, SEVERITIES, STANDARD  # noqa: E402
from robench.perturbations.corruptions.fast import FAST_NAMES, corrupt_fast  # noqa: E402
from robench.perturbations.corruptions.reference import corrupt_reference  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench_corruptions -->", "<!-- /bench_corruptions -->"
PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "cat")
SIZE = 224
IMPLEMENTATIONS = {"reference": corrupt_reference, "fast": corrupt_fast}
FIRST_CALL = """
import time, numpy as np
import imagecorruptions  # the library's imports (OpenCV, scikit-image, numba) are not timed
from robench.perturbations.corruptions.{module} import {function} as corrupt
image = np.random.default_rng(0).integers(0, 256, (224, 224, 3), dtype=np.uint8)
started = time.perf_counter()
corrupt(image, "glass_blur", {severity}, 0)
print(time.perf_counter() - started)
"""


def _images(count: int) -> list[np.ndarray]:
    import skimage.data

    photos = [getattr(skimage.data, PHOTOS[k % len(PHOTOS)])() for k in range(count)]
    return [np.asarray(Image.fromarray(p).resize((SIZE, SIZE), Image.BILINEAR)) for p in photos]


def _timed(function: object, *args: object) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    out = function(*args)  # type: ignore[operator]
    return time.perf_counter() - started, out


def per_corruption(images: list[np.ndarray], rounds: int) -> dict[str, dict[str, float]]:
    """Median ms per call for both implementations, and how far their outputs differ."""
    rows = {}
    for name in ALL:
        times: dict[str, list[float]] = {"reference": [], "fast": []}
        max_diff, differing, total = 0, 0, 0
        for r in range(rounds):
            for i, image in enumerate(images):
                for severity in SEVERITIES:
                    seed = 1000 * r + 10 * i + severity
                    order = (
                        ["reference", "fast"] if (i + severity + r) % 2 else ["fast", "reference"]
                    )
                    outs = {}
                    for impl in order:
                        seconds, outs[impl] = _timed(
                            IMPLEMENTATIONS[impl], image, name, severity, seed
                        )
                        times[impl].append(seconds)
                    diff = np.abs(outs["fast"].astype(np.int16) - outs["reference"])
                    max_diff = max(max_diff, int(diff.max()))
                    differing += int(np.count_nonzero(diff))
                    total += diff.size
        ref, fast = (statistics.median(times[k]) * 1e3 for k in ("reference", "fast"))
        rows[name] = {
            "reference": ref,
            "fast": fast,
            "max_diff": max_diff,
            "share": differing / total,
        }
    return rows


def grid(images: list[np.ndarray], rounds: int) -> dict[str, float]:
    """Median seconds for all 15 standard corruptions x 5 severities on one image."""
    times: dict[str, list[float]] = {"reference": [], "fast": []}
    for r in range(rounds):
        for i, image in enumerate(images):
            for impl in ["reference", "fast"] if (i + r) % 2 else ["fast", "reference"]:
                started = time.perf_counter()
                for name in STANDARD:
                    for severity in SEVERITIES:
                        IMPLEMENTATIONS[impl](image, name, severity, i + severity)
                times[impl].append(time.perf_counter() - started)
    return {impl: statistics.median(values) for impl, values in times.items()}


def first_call(repeats: int) -> dict[str, float]:
    """Median seconds of the first glass_blur call in a fresh process (imports excluded)."""
    cases = {
        "reference, severity 1": ("reference", "corrupt_reference", 1),
        "reference, severity 3": ("reference", "corrupt_reference", 3),
        "fast, severity 1 (warm numba cache)": ("fast", "corrupt_fast", 1),
    }
    out = {}
    for label, (module, function, severity) in cases.items():
        code = FIRST_CALL.format(module=module, function=function, severity=severity)
        runs = [
            float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True, cwd=ROOT).stdout)
            for _ in range(repeats)
        ]  # fmt: skip
        out[label] = statistics.median(runs)
    return out


class _CorruptedImages:
    """A map-style dataset: image i corrupted by STANDARD[i % 15], severity and seed from i."""

    def __init__(self, images: list[np.ndarray], length: int) -> None:
        self.images, self.length = images, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> object:
        import torch

        name = STANDARD[index % len(STANDARD)]
        severity = SEVERITIES[(index // len(STANDARD)) % len(SEVERITIES)]
        image = self.images[index % len(self.images)]
        out = corrupt_fast(image, name, severity, seed=index)
        return torch.from_numpy(out).permute(2, 0, 1)


def dataloader(images: list[np.ndarray], length: int) -> dict[int, float]:
    """Images/s over one epoch, after a warm-up epoch with the same (persistent) workers."""
    from torch.utils.data import DataLoader

    rates = {}
    for workers in (0, 1, 2):
        loader = DataLoader(
            _CorruptedImages(images, length),
            batch_size=8,
            num_workers=workers,
            persistent_workers=workers > 0,
        )
        for _ in loader:  # warm-up: worker start-up, caches
            pass
        started = time.perf_counter()
        for _ in loader:
            pass
        rates[workers] = length / (time.perf_counter() - started)
        del loader
    return rates


def render(args: argparse.Namespace, results: dict[str, object], loads: tuple[str, str]) -> str:
    rows: dict[str, dict[str, float]] = results["rows"]  # type: ignore[assignment]
    whole: dict[str, float] = results["grid"]  # type: ignore[assignment]
    lines = [
        START,
        "## Corruption throughput (benchmarks/bench_corruptions.py)",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.machine()}; {os.cpu_count()} CPUs; Python "
        f"{platform.python_version()}; one thread per library",
        f"- load average (1, 5, 15 min) before: {loads[0]}; after: {loads[1]}",
        f"- {args.images} photographs at {SIZE} x {SIZE}, {args.rounds} round(s), every "
        "severity; medians; `fast` reimplements: " + ", ".join(sorted(FAST_NAMES)),
        "",
        "| corruption | reference ms | fast ms | speed-up | max abs diff | differing values |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in rows.items():
        mark = "" if name in FAST_NAMES else " (library)"
        lines.append(
            f"| {name}{mark} | {row['reference']:.2f} | {row['fast']:.2f} | "
            f"{row['reference'] / row['fast']:.1f}x | {row['max_diff']:.0f} | {row['share']:.2%} |"
        )
    lines += [
        "",
        f"- whole 15 x 5 grid per image: reference {whole['reference']:.3f} s, fast "
        f"{whole['fast']:.3f} s ({whole['reference'] / whole['fast']:.1f}x)",
        "- first glass_blur call in a fresh process (s, imports excluded): "
        + "; ".join(f"{k}: {v:.2f}" for k, v in results["first_call"].items()),  # type: ignore[attr-defined]
        "- fast path in a torch DataLoader (batch 8, 224 x 224, corruption and severity by "
        "index): "
        + "; ".join(f"{w} workers: {r:.0f} images/s" for w, r in results["loader"].items()),  # type: ignore[attr-defined]
    ]
    return "\n".join([*lines, END])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 images, 1 round, short loaders")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    args.images, args.rounds = (2, 1) if args.quick else (4, 2)
    import cv2

    cv2.setNumThreads(1)
    before = load_average()
    images = _images(args.images)
    for name in ALL:  # warm-up: imports, numba kernels, the library's own compilation
        for impl in IMPLEMENTATIONS.values():
            for severity in SEVERITIES:
                impl(images[0], name, severity, 0)
    results: dict[str, object] = {
        "rows": per_corruption(images, args.rounds),
        "grid": grid(images, args.rounds),
        "first_call": first_call(1 if args.quick else 2),
        "loader": dataloader(images, 60 if args.quick else 150),
    }
    section = render(args, results, (before, load_average()))
    print(section)
    write_section(args.output, section, START, END)


if __name__ == "__main__":
    main()
