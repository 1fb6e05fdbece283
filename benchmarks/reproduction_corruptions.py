"""The corruption part of the reproduction study (reports/reproduction.md, paper Table 9).

Reads two reports of the `reproduction-corruptions` suite (baseline and Elliptical, the same
samples) and prints a markdown table: clean accuracy, mean accuracy over the 15 standard and
over the 4 extra corruptions (all severities) and per corruption group, each model's value and
the paired difference (Elliptical - baseline) with a 95% bootstrap interval over test images
(one draw of images applied to both models and every corruption).

    robench eval vit_nano_fmnist -s reproduction-corruptions --limit 2000 -o base.json
    robench eval vit_nano_elliptical_fmnist -s reproduction-corruptions --limit 2000 -o ell.json
    python benchmarks/reproduction_corruptions.py base.json ell.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from robench._core.corruption_names import EXTRA, GROUPS, STANDARD
from robench.results.report.schema import Report, read_report

N_BOOT = 2000


def _correct(report: Report, names: list[str]) -> np.ndarray:
    """(results, samples) per-sample top-1 correctness."""
    return np.array([report.sample_values(name, "top1") for name in names], dtype=float)


def _names(report: Report, corruptions: tuple[str, ...]) -> list[str]:
    return [
        r.name
        for r in report.results
        if r.kind == "corruption" and r.params["corruption"] in corruptions
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline", type=Path)
    parser.add_argument("elliptical", type=Path)
    args = parser.parse_args()
    base, ell = read_report(args.baseline), read_report(args.elliptical)
    if base.samples["default"].indices != ell.samples["default"].indices:
        raise SystemExit("the two reports were evaluated on different samples")
    n = len(base.samples["default"].indices)
    rng = np.random.default_rng(0)
    draws = rng.integers(0, n, size=(N_BOOT, n))
    rows = {"clean": ["clean"]}
    rows["15 standard corruptions x 5"] = _names(base, STANDARD)
    rows["4 extra corruptions x 5"] = _names(base, EXTRA)
    rows.update(
        {f"{group} ({len(names)} x 5)": _names(base, names) for group, names in GROUPS.items()}
    )
    print(
        f"Top-1 (%) on {n} Fashion-MNIST test images; difference: 95% paired bootstrap "
        "over images.\n"
    )
    print("| | baseline | elliptical | difference (ell. - base) |")
    print("|---|---|---|---|")
    for label, names in rows.items():
        b, e = _correct(base, names).mean(axis=0), _correct(ell, names).mean(axis=0)
        diff = (e - b)[draws].mean(axis=1)
        low, high = np.percentile(diff, [2.5, 97.5]) * 100
        print(
            f"| {label} | {100 * b.mean():.2f} | {100 * e.mean():.2f} | "
            f"{100 * (e.mean() - b.mean()):+.2f} [{low:+.2f}, {high:+.2f}] |"
        )


if __name__ == "__main__":
    main()
