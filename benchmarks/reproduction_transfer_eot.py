"""The reproduction study's transfer and EOT sections, from the reports of three runs.

Run from the repository root (after `make install`); the commands it documents:

    robench eval vit_nano_elliptical_fmnist -s transfer --limit 500 -b 250 -o ell_transfer.json
    robench eval vit_nano_fmnist -s transfer --limit 500 -b 250 -o base_transfer.json
    robench eval vit_nano_elliptical_fmnist -s reproduction-eot \\
        --model-kwargs '{"estimator": "random"}' --limit 200 -b 200 -o random_m.json
    .venv/bin/python benchmarks/reproduction_transfer_eot.py \\
        --transfer base_transfer.json ell_transfer.json --eot random_m.json

It reads the per-sample top-1 of each result (every result of a report runs on the same
seeded samples) and writes, between the `transfer-eot` markers of reports/reproduction.md,
each result's accuracy with its 95% interval (the report's, Wilson) and each paired
difference with a 95% percentile bootstrap interval over images (2000 resamples, seed 0) and
the discordant pairs of an exact McNemar test.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path
from typing import Any

import numpy as np
from report_sections import load_average, write_section
from scipy.stats import binomtest

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- transfer-eot -->", "<!-- /transfer-eot -->"
SHORT = {"vit_nano_fmnist": "baseline", "vit_nano_elliptical_fmnist": "Elliptical"}


def _read(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _correct(report: dict[str, Any], name: str) -> np.ndarray:
    result = next(r for r in report["results"] if r["name"] == name)
    return np.asarray(report["samples"][result["dataset"]]["values"][name]["top1"], dtype=float)


def _accuracy(report: dict[str, Any], name: str) -> str:
    metric = next(r for r in report["results"] if r["name"] == name)["metrics"]["top1"]
    low, high = metric["ci95"]
    return f"{100 * metric['value']:.2f} [{100 * low:.2f}, {100 * high:.2f}]"


def _difference(first: np.ndarray, second: np.ndarray) -> str:
    """second - first in points, a paired bootstrap interval and McNemar's discordant pairs."""
    rng = np.random.default_rng(0)
    n = len(first)
    draws = rng.integers(0, n, size=(2000, n))
    diffs = (second[draws] - first[draws]).mean(axis=1)
    low, high = np.percentile(diffs, [2.5, 97.5])
    only_first = int(((first == 1) & (second == 0)).sum())
    only_second = int(((first == 0) & (second == 1)).sum())
    discordant = only_first + only_second
    p = binomtest(only_first, discordant).pvalue if discordant else 1.0
    value = 100 * (second.mean() - first.mean())
    return (
        f"{value:+.2f} [{100 * low:+.2f}, {100 * high:+.2f}] | {only_first} / {only_second} "
        f"(p = {p:.2g})"
    )


def transfer_rows(reports: list[dict[str, Any]]) -> list[str]:
    rows = []
    for report in reports:
        target = report["model"]["name"]
        for white_box in ("fgsm", "pgd-10", "mi-fgsm", "di-fgsm", "vmi-fgsm"):
            for result in report["results"]:
                surrogate = result["params"].get("surrogate")
                if not result["name"].startswith(f"{white_box}-from-") or surrogate is None:
                    continue
                source = SHORT.get(surrogate["name"], surrogate["name"])
                name = result["name"]
                difference = _difference(_correct(report, white_box), _correct(report, name))
                rows.append(
                    f"| {white_box} | {source} -> {SHORT.get(target, target)} | "
                    f"{_accuracy(report, white_box)} | {_accuracy(report, name)} | "
                    f"{difference} |"
                )
    return rows


def eot_rows(report: dict[str, Any]) -> list[str]:
    rows = []
    for plain, eot in (("pgd20-4", "eot-pgd20-4"), ("apgd-ce-4", "eot-apgd-ce-4")):
        rows.append(
            f"| {plain} | {_accuracy(report, plain)} | {_accuracy(report, eot)} | "
            f"{_difference(_correct(report, plain), _correct(report, eot))} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transfer", type=Path, nargs="+", required=True)
    parser.add_argument("--eot", type=Path, required=True)
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "reproduction.md")
    args = parser.parse_args()
    transfers = [_read(path) for path in args.transfer]
    random_m = _read(args.eot)
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    n_transfer = transfers[0]["results"][0]["n_samples"]
    n_eot = random_m["results"][0]["n_samples"]
    kwargs = random_m["model"]["model_kwargs"]
    section = "\n".join(
        [
            START,
            "## Transfer attacks between the nano ViTs, and EOT on the random-M ablation",
            "",
            f"Generated by `python benchmarks/reproduction_transfer_eot.py` on {today} "
            f"(robench {random_m['robench_version']}, torch "
            f"{random_m['environment'].get('torch')}, load average {load_average()}), from "
            "the commands in its docstring (seed 0).",
            "",
            f"Transfer (suite `transfer` v{transfers[0]['suite']['version']}, {n_transfer} "
            "seeded Fashion-MNIST test images, L-inf 4/255): each attack crafted on one shipped "
            "nano ViT and scored on the other, beside the white-box attack on the same images. "
            "Top-1 % [95% interval]; difference: transfer - white-box, points [paired "
            "bootstrap 95%]; discordant pairs: images right only under white-box / only under "
            "transfer, with exact McNemar p.",
            "",
            "| attack | surrogate -> model | white-box | transfer | difference | discordant |",
            "|---|---|---|---|---|---|",
            *transfer_rows(transfers),
            "",
            f"EOT on the random-M ablation (`vit_nano_elliptical_fmnist` with model kwargs "
            f"`{json.dumps(kwargs)}`: M drawn at random on every forward pass; suite "
            f"`reproduction-eot` v{random_m['suite']['version']}, {n_eot} seeded test images, "
            "L-inf 4/255). Clean top-1: "
            f"{_accuracy(random_m, 'clean')}. Each attack without EOT and with 10 gradient "
            "samples per step; difference: EOT - plain, points [paired bootstrap 95%]; "
            "discordant pairs: right only under plain / only under EOT.",
            "",
            "| attack | plain | EOT (10 samples) | difference | discordant |",
            "|---|---|---|---|---|",
            *eot_rows(random_m),
            END,
        ]
    )
    write_section(args.output, section, START, END)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
