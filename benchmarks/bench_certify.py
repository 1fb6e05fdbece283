"""Randomized smoothing's certification throughput against a bare loop on the same noise.

Run from the repository root:

    .venv/bin/python benchmarks/bench_certify.py                 # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_certify.py --n 1000 --samples 4 --output /tmp/c.md

robench's side is the `randomized-smoothing` kind's `perturb_samples` (CERTIFY: per-sample
generators, n0 selection and n estimation draws in chunks of `batch`, votes counted, the
Clopper-Pearson bound and the radius) on the shipped `vit_nano_fmnist`. The bare loop
forwards the same noisy batches, drawn from the same per-sample generators in the same
chunks, and takes the argmax, nothing else: what any implementation must spend. The two run
alternately sample by sample (AB BA AB ..., so slow spells of a shared machine fall on
both), and again in whole rounds, also alternating; reported: noisy copies per second of
each and the ratio robench / loop (goal: at least 0.95). The votes of the loop are checked
equal to robench's counts.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time
from pathlib import Path
from typing import Any

import torch
from report_sections import cpu_name, load_average, write_section

from robench._core.seeding import derive_seed
from robench.data.idx import read_idx
from robench.models.loading import load_model
from robench.perturbations.base import build_perturbation
from robench.perturbations.certification.smoothing import noise_generator

ROOT = Path(__file__).resolve().parents[1]
FMNIST = Path("/usr/share/datasets/fashion-mnist")
START, END = "<!-- bench_certify -->", "<!-- /bench_certify -->"
SIGMA, N0, BATCH = 0.25, 100, 1000


def _images(count: int) -> torch.Tensor:
    pixels = read_idx(FMNIST / "t10k-images-idx3-ubyte.gz")[:count]
    return torch.from_numpy(pixels).float().div(255).unsqueeze(1)  # (B, 1, 28, 28)


def _bare(model: Any, image: torch.Tensor, seed: int, n: int) -> torch.Tensor:
    """The same noisy batches forwarded, argmax taken: votes (K,) of both phases summed."""
    generator = noise_generator(seed, image.device)
    votes = torch.zeros(10, dtype=torch.long)
    with torch.no_grad():
        for total in (N0, n):
            left = total
            while left:
                size = min(BATCH, left)
                copies = image.unsqueeze(0).expand(size, *image.shape)
                noise = torch.randn(copies.shape, generator=generator, dtype=image.dtype)
                votes += torch.bincount(model(copies + noise * SIGMA).argmax(-1), minlength=10)
                left -= size
    return votes


def _timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def measure(n: int, samples: int, rounds: int) -> dict[str, Any]:
    model = load_model("vit_nano_fmnist").model.eval()
    smoothing: Any = build_perturbation(
        "randomized-smoothing", {"sigma": SIGMA, "n0": N0, "n": n, "batch": BATCH}
    )
    images = _images(samples)
    seeds = [derive_seed(0, "bench", i) for i in range(samples)]
    labels = torch.zeros(1, dtype=torch.long)
    smoothing.perturb_samples(model, images[:1], labels, seeds[:1])  # warm-up
    ours, bare, equal = [], [], True
    for i, (image, seed) in enumerate(zip(images, seeds, strict=True)):  # ABBA by sample
        run_ours = lambda: smoothing.perturb_samples(model, image[None], labels, [seed])  # noqa: B023, E731
        run_bare = lambda: _bare(model, image, seed, n)  # noqa: B023, E731
        if i % 2:
            t_bare, votes = _timed(run_bare)
            t_ours, (_, cols) = _timed(run_ours)
        else:
            t_ours, (_, cols) = _timed(run_ours)
            t_bare, votes = _timed(run_bare)
        ours.append(t_ours)
        bare.append(t_bare)
        # The loop's votes include the selection's; the candidate's estimation count is
        # robench's nA, so both phases' candidate votes must add up.
        candidate = cols["candidate"][0]
        equal &= int(votes[candidate]) == cols["count_selection"][0] + cols["count_estimation"][0]
    whole = []
    whole_ours = lambda: smoothing.perturb_samples(model, images, labels, seeds)  # noqa: E731
    whole_bare = lambda: [_bare(model, x, s, n) for x, s in zip(images, seeds, strict=True)]  # noqa: E731
    for r in range(rounds):  # the order alternates here too: AB BA AB ...
        if r % 2:
            t_bare, _ = _timed(whole_bare)
            t_ours, _ = _timed(whole_ours)
        else:
            t_ours, _ = _timed(whole_ours)
            t_bare, _ = _timed(whole_bare)
        whole.append(t_bare / t_ours)
    copies = N0 + n
    ratios = [b / o for o, b in zip(ours, bare, strict=True)]
    return {
        "ours_rate": copies / statistics.median(ours),
        "bare_rate": copies / statistics.median(bare),
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "whole": whole,
        "equal": equal,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="estimation draws per sample")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=4, help="whole-batch rounds")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    before = load_average()
    found = measure(args.n, args.samples, args.rounds)
    after = load_average()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = "\n".join(
        [
            START,
            "## Randomized smoothing: CERTIFY vs a bare loop on the same noise "
            "(benchmarks/bench_certify.py)",
            "",
            f"- date: {now}; CPU: {cpu_name()}, {args.threads} torch threads",
            f"- load average (uptime) before: {before}; after: {after}",
            f"- model: shipped `vit_nano_fmnist`; sigma {SIGMA}, n0 {N0}, n {args.n:,}, "
            f"noise batch {BATCH}; {args.samples} Fashion-MNIST test images, alternated "
            "sample by sample after a warm-up",
            "",
            "| side | noisy copies / s (median over samples) |",
            "|---|---:|",
            f"| bare loop (same noise and chunks; forward, argmax) | {found['bare_rate']:.0f} |",
            f"| robench `randomized-smoothing` (CERTIFY) | {found['ours_rate']:.0f} |",
            "",
            f"Throughput ratio robench / loop: **{found['ratio']:.3f}** (median over samples; "
            f"per sample {', '.join(f'{r:.3f}' for r in found['ratios'])}); whole-batch "
            f"rounds {', '.join(f'{r:.3f}' for r in found['whole']) or 'not run'}. Votes equal: "
            f"{found['equal']}. Goal: at least 0.95.",
            END,
        ]
    )
    write_section(args.output, section, START, END)
    print(section)


if __name__ == "__main__":
    main()
