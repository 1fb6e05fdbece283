"""Segmentation evaluation, clean pass: robench's task path vs a bare loop on the same work.

Run from the repository root:

    .venv/bin/python benchmarks/bench_segmentation_eval.py        # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_segmentation_eval.py --quick --output /tmp/s.md

Both sides evaluate `segmenter_nano_baseline` (the shipped card `segmenter_nano_baseline_scenes`
when installed, else seeded random weights written to a safetensors file: the work is the same)
on the same seeded subset of built-in fashion scenes, at the same batch size:

1. Whole runs: `robench.evaluation.request.evaluate` with a clean-only segmentation suite
   (loads the model, checks it and the data, scores per-image pixel counts, writes the
   per-sample store and the report with bootstrap intervals) against the script a user would
   write: load the model, a DataLoader over `FashionScenes`, forward, `argmax(1)`, a
   confusion matrix by `bincount`, mIoU at the end. Rounds in ABBA order after a warm-up.
2. Per batch, interleaved batch by batch on batches loaded once: the task's `score` against the
   loop's forward + argmax + confusion counts; slow spells of a shared machine fall on both.

Reported: median seconds per side, the median over rounds of the throughput ratio robench /
loop (goal: at least 0.95), the fastest rounds' ratio, the interleaved ratio, and that both
sides' mIoU agree. The section between the markers of the output file is replaced.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from report_sections import cpu_name, load_average, write_section
from torch.utils.data import DataLoader, Subset

from robench.data.segmentation.scenes import FashionScenes
from robench.data.subset import select_indices
from robench.evaluation.request import EvalRequest, evaluate
from robench.models.loading import load_model
from robench.models.spec import bundled_cards
from robench.tasks.registry import load_task
from robench.tasks.semantic_segmentation import collate_label_maps

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE, CARD = "segmenter_nano_baseline", "segmenter_nano_baseline_scenes"
START, END = "<!-- bench_segmentation_eval -->", "<!-- /bench_segmentation_eval -->"
GOAL = 0.95
SUITE = 'name = "bench-seg"\nversion = 1\ntask = "semantic-segmentation"\n'
SUITE += 'metrics = ["miou"]\n[[perturbations]]\nkind = "clean"\n'


def _model_source(work: Path) -> tuple[str, Path | None]:
    """(MODEL, checkpoint): the shipped card, else seeded random weights in a file."""
    if CARD in bundled_cards():
        return CARD, None
    import timm
    from safetensors.torch import save_file

    import robench.models.zoo  # noqa: F401  (registers the Segmenters with timm)

    torch.manual_seed(0)
    path = work / "segmenter.safetensors"
    save_file(timm.create_model(ARCHITECTURE).state_dict(), str(path))
    return ARCHITECTURE, path


def _robench(model: str, checkpoint: Path | None, limit: int, batch: int, work: Path):
    suite = work / "clean.toml"
    suite.write_text(SUITE)

    def run() -> float:
        report = evaluate(
            EvalRequest(
                suite=str(suite),
                data=None,  # fashion scenes
                out=work / "r.json",
                model=model,
                checkpoint=checkpoint,
                limit=limit,
                batch_size=batch,
                overwrite=True,
            )
        )
        return report.results[0].metrics["miou"].value

    return run


def _confusion(pred: torch.Tensor, labels: torch.Tensor, k: int) -> np.ndarray:
    """The loop's counts: a (K, K) confusion matrix of (label, prediction) pixels."""
    scored = (labels >= 0) & (labels < k)
    pairs = labels[scored] * k + pred[scored]
    return torch.bincount(pairs, minlength=k * k).reshape(k, k).numpy()


def _miou(confusion: np.ndarray) -> float:
    inter = np.diag(confusion).astype(float)
    union = confusion.sum(0) + confusion.sum(1) - inter
    return float(np.nanmean(np.where(union > 0, inter / np.maximum(union, 1), np.nan)))


def _loop(model_name: str, checkpoint: Path | None, limit: int, batch: int) -> Callable[[], float]:
    def run() -> float:
        loaded = load_model(model_name, checkpoint=checkpoint)
        model = loaded.model.eval()
        scenes = FashionScenes(split="test")
        k = len(scenes.classes)
        loader = DataLoader(
            Subset(scenes, select_indices(len(scenes), limit, 0)),
            batch_size=batch,
            collate_fn=collate_label_maps,
        )
        confusion = np.zeros((k, k), dtype=np.int64)
        with torch.inference_mode():
            for images, labels in loader:
                confusion += _confusion(model(images).argmax(1), labels, k)
        return _miou(confusion)

    return run


def _timed(run: Callable[[], float]) -> tuple[float, float]:
    start = time.perf_counter()
    value = run()
    return time.perf_counter() - start, value


def measure(sides: dict[str, Callable[[], float]], rounds: int) -> dict[str, object]:
    for run in sides.values():
        run()  # warm-up: imports, caches, first-call costs
    times: dict[str, list[float]] = {name: [] for name in sides}
    values: dict[str, float] = {}
    ratios = []
    for r in range(rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        seconds = {}
        for side in order:
            seconds[side], values[side] = _timed(sides[side])
            times[side].append(seconds[side])
        ratios.append(seconds["loop"] / seconds["robench"])
    return {
        "loop": statistics.median(times["loop"]),
        "robench": statistics.median(times["robench"]),
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "fastest": min(times["loop"]) / min(times["robench"]),
        "values": values,
    }


def interleaved(model_name: str, checkpoint: Path | None, limit: int, batch: int, passes: int):
    """Median over passes of loop / robench seconds of the per-batch work, batch by batch."""
    model = load_model(model_name, checkpoint=checkpoint).model.eval()
    task = load_task("semantic-segmentation")
    scenes = FashionScenes(split="test")
    k = len(scenes.classes)
    subset = Subset(scenes, select_indices(len(scenes), limit, 0))
    batches = list(DataLoader(subset, batch_size=batch, collate_fn=collate_label_maps))
    ratios = []
    for _ in range(passes):
        seconds = {"loop": 0.0, "robench": 0.0}
        for n, (images, labels) in enumerate(batches):
            for side in ("loop", "robench") if n % 2 == 0 else ("robench", "loop"):
                start = time.perf_counter()
                if side == "loop":
                    with torch.inference_mode():
                        _confusion(model(images).argmax(1), labels, k)
                else:
                    task.score(model, images, labels)
                seconds[side] += time.perf_counter() - start
        ratios.append(seconds["loop"] / seconds["robench"])
    return statistics.median(ratios), ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few scenes, two rounds")
    parser.add_argument("--limit", type=int, default=1024, help="scenes per run")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--passes", type=int, default=3, help="passes of the interleaved check")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--note", default="", help="a sentence on the machine's state")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    if args.quick:
        args.limit, args.rounds, args.passes = 128, 2, 1
    torch.set_num_threads(args.threads)
    started, before = datetime.datetime.now(datetime.timezone.utc), load_average()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model, checkpoint = _model_source(work)
        sides = {
            "loop": _loop(model, checkpoint, args.limit, args.batch_size),
            "robench": _robench(model, checkpoint, args.limit, args.batch_size, work),
        }
        found = measure(sides, args.rounds)
        print(found, flush=True)
        per_batch, passes = interleaved(model, checkpoint, args.limit, args.batch_size, args.passes)
    values = found["values"]
    assert isinstance(values, dict)
    equal = abs(values["loop"] - values["robench"]) < 1e-9
    verdict = "pass" if found["ratio"] >= GOAL else "FAIL"  # type: ignore[operator]
    weights = "the shipped card" if checkpoint is None else "seeded random weights"
    lines = [
        START,
        "## Segmentation evaluation, clean: robench vs a bare loop "
        "(benchmarks/bench_segmentation_eval.py)",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} UTC; machine: {cpu_name()}; torch "
        f"{torch.__version__}, {args.threads} thread(s)",
        f"- load average (1, 5, 15 min) before: {before}; after: {load_average()}",
        f"- model `{model}` ({weights}); {args.limit} fashion scenes (64x64, seeded subset of "
        f"the test split), batch {args.batch_size}; {args.rounds} rounds ABBA after a warm-up",
        *([f"- {args.note}"] if args.note else []),
        "",
        "| side | median s | throughput robench / loop (median of rounds) | fastest rounds "
        "| per batch, interleaved | goal | mIoU (loop, robench) |",
        "|---|---:|---:|---:|---:|---|---|",
        f"| bare loop (DataLoader, forward, argmax, bincount) | {found['loop']:.2f} | | | | | |",
        f"| `evaluate` (clean suite, task path) | {found['robench']:.2f} | {found['ratio']:.3f} "
        f"| {found['fastest']:.3f} | {per_batch:.3f} | >= {GOAL} {verdict} "
        f"| {values['loop']:.4f}, {values['robench']:.4f} ({'equal' if equal else 'DIFFER'}) |",
        "",
        "Per-round ratios: "
        + ", ".join(f"{r:.3f}" for r in found["ratios"])  # type: ignore[attr-defined]
        + "; interleaved per pass: "
        + ", ".join(f"{r:.3f}" for r in passes)
        + ".",
        END,
    ]
    section = "\n".join(lines)
    print(section)
    write_section(args.output, section, START, END)


if __name__ == "__main__":
    main()
