"""A transformers image classifier's clean pass: `robench eval hf:DIR` against a bare loop.

Run from the repository root:

    .venv/bin/python benchmarks/bench_hf_image.py            # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_hf_image.py --quick --output /tmp/h.md

The model is a small ViT built by transformers (random weights, 64x64 inputs, saved with
`save_pretrained` and its `ViTImageProcessor`); the data are Fashion-MNIST test images written
as RGB PNG class folders at 80x80, so every image is resized by both sides. The bare loop is
what a user writes: load the model and processor with `from_pretrained`, read each batch's
images with PIL, `processor(images)`, `model(**inputs).logits.argmax(-1)` under
`torch.inference_mode()`. robench's side is `evaluate` with a clean-only suite on `hf:DIR`
(model loading, the data, the checks, the per-sample file and the report included). Rounds
run in ABBA order after one untimed warm-up of each; reported: median seconds per side and
the median per-round throughput ratio robench / loop (goal: at least 0.95). The two sides'
predictions are compared too (they must be equal).

Whole runs on a shared machine move by 10% or more from round to round, so a second
measurement alternates the two sides batch by batch on the same files (`interleaved`):
robench's per-batch work (its dataset reads and preprocesses the batch's images as its
DataLoader does, then seeded scoring and a stored line) against the loop's (PIL reads, the
processor, the forward pass), so slow spells fall on both sides alike. Median over passes of
loop / robench seconds.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from report_sections import cpu_name, load_average, write_section
from torch.utils.data import default_collate
from transformers import AutoImageProcessor, AutoModelForImageClassification

from robench.data.idx import read_idx
from robench.evaluation.request import EvalRequest, evaluate
from robench.results.report.schema import read_report

ROOT = Path(__file__).resolve().parents[1]
FMNIST = Path("/usr/share/datasets/fashion-mnist")
START, END = "<!-- bench_hf_image -->", "<!-- /bench_hf_image -->"
SUITE = 'name = "clean"\nversion = 1\ndescription = "clean"\n[[perturbations]]\nkind = "clean"\n'


def _build(work: Path, n_images: int) -> tuple[Path, Path, list[Path]]:
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    torch.manual_seed(0)
    config = ViTConfig(
        image_size=64, patch_size=8, hidden_size=96, num_hidden_layers=4, num_attention_heads=4,
        intermediate_size=192, num_labels=10,
    )  # fmt: skip
    model_dir = work / "vit"
    ViTForImageClassification(config).save_pretrained(model_dir)
    ViTImageProcessor(size={"height": 64, "width": 64}).save_pretrained(model_dir)
    data = work / "images"
    images = read_idx(FMNIST / "t10k-images-idx3-ubyte.gz")[:n_images]
    labels = read_idx(FMNIST / "t10k-labels-idx1-ubyte.gz")[:n_images]
    for i, (pixels, label) in enumerate(zip(images, labels, strict=True)):
        folder = data / f"{int(label)}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).convert("RGB").resize((80, 80)).save(folder / f"{i:05d}.png")
    # The loop reads the images in robench's order (class folders numerically, then names).
    files = sorted(data.glob("*/*.png"), key=lambda p: (int(p.parent.name), p.name))
    return model_dir, data, files


def _loop(model_dir: Path, files: list[Path], batch: int) -> Callable[[], list[int]]:
    def run() -> list[int]:
        model = AutoModelForImageClassification.from_pretrained(model_dir).eval()
        processor = AutoImageProcessor.from_pretrained(model_dir)
        predictions: list[int] = []
        with torch.inference_mode():
            for start in range(0, len(files), batch):
                images = [Image.open(p).convert("RGB") for p in files[start : start + batch]]
                logits = model(**processor(images, return_tensors="pt")).logits
                predictions += logits.argmax(-1).tolist()
        return predictions

    return run


def _robench(model_dir: Path, data: Path, batch: int, work: Path) -> Callable[[], list[int]]:
    suite = work / "clean.toml"
    suite.write_text(SUITE)

    def run() -> list[int]:
        out = work / "report.json"
        request = EvalRequest(
            suite=str(suite), data=str(data), out=out, model=f"hf:{model_dir}",
            batch_size=batch, overwrite=True,
        )  # fmt: skip
        evaluate(request)
        predictions = read_report(out).samples["default"].values["clean"]["prediction"]
        out.unlink()
        return list(predictions)

    return run


def _timed(run: Callable[[], list[int]]) -> tuple[float, list[int]]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def measure(rounds: int, n_images: int, batch: int, work: Path) -> dict[str, object]:
    model_dir, data, files = _build(work, n_images)
    sides = {
        "loop": _loop(model_dir, files, batch),
        "robench": _robench(model_dir, data, batch, work),
    }
    outputs = {name: run() for name, run in sides.items()}  # warm-up, untimed
    times: dict[str, list[float]] = {"loop": [], "robench": []}
    for r in range(rounds):
        order = ["loop", "robench"] if r % 2 == 0 else ["robench", "loop"]
        for name in order:
            seconds, outputs[name] = _timed(sides[name])
            times[name].append(seconds)
    ratios = [loop / ours for loop, ours in zip(times["loop"], times["robench"], strict=True)]
    return {
        "loop_s": statistics.median(times["loop"]),
        "robench_s": statistics.median(times["robench"]),
        "ratio": statistics.median(ratios),
        "fastest_ratio": min(times["loop"]) / min(times["robench"]),
        "round_ratios": ratios,
        "equal": outputs["loop"] == outputs["robench"],
    }


def interleaved(
    model_dir: Path, data: Path, files: list[Path], batch: int, passes: int, work: Path
) -> list[float]:
    """loop / robench seconds of each counted pass."""
    from robench._core.batching import batch_indices
    from robench._core.seeding import derive_seed
    from robench.evaluation.runner import score_seeded
    from robench.evaluation.store.sample_store import SampleStore
    from robench.models.loading import load_model
    from robench.tasks.registry import load_task

    task = load_task("image-classification")
    loaded = load_model(f"hf:{model_dir}")
    dataset = task.open_data(
        str(data), loaded, split="test", layout=None, class_map=None, options={}
    )
    model = AutoModelForImageClassification.from_pretrained(model_dir).eval()
    processor = AutoImageProcessor.from_pretrained(model_dir)
    chunks = list(batch_indices(list(range(len(dataset))), batch))
    ratios = []
    for p in range(passes + 1):  # the first pass warms both sides up and is not counted
        seconds = {"loop": 0.0, "robench": 0.0}
        store = SampleStore(work / f"interleaved-{p}.jsonl", {"pass": p}, resume=False)
        try:
            for n, chunk in enumerate(chunks):
                for side in ("loop", "robench") if n % 2 == 0 else ("robench", "loop"):
                    start = time.perf_counter()
                    if side == "loop":
                        with torch.inference_mode():
                            images = [Image.open(files[i]).convert("RGB") for i in chunk]
                            model(**processor(images, return_tensors="pt")).logits.argmax(
                                -1
                            ).tolist()
                    else:
                        # What the runner's DataLoader does for a batch (no workers).
                        images, labels = default_collate(dataset.__getitems__(chunk))
                        columns = score_seeded(
                            loaded.model, task, images, labels, derive_seed(0, "", n)
                        )
                        store.append("clean", chunk, columns)
                    seconds[side] += time.perf_counter() - start
        finally:
            store.close()
        ratios.append(seconds["loop"] / seconds["robench"])
    return ratios[1:]


def _listed(values: Any) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds of 128 images")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    rounds, n_images, batch = (2, 128, 64) if args.quick else (6, 1024, 64)
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(rounds, n_images, batch, Path(tmp))
        model_dir, data, files = _build(Path(tmp) / "again", n_images)
        passes = interleaved(model_dir, data, files, batch, rounds, Path(tmp))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = "\n".join(
        [
            START,
            "## Transformers image classifier, clean pass: robench vs a bare loop "
            "(benchmarks/bench_hf_image.py)",
            "",
            f"- date: {now}; CPU: {cpu_name()}, {torch.get_num_threads()} torch threads",
            f"- load average (uptime) before: {load_before}; after: {load_average()}",
            f"- model: ViT from transformers (64x64, patch 8, 4 layers, width 96), "
            f"`hf:` folder; {n_images} Fashion-MNIST PNGs at 80x80, batch {batch}, "
            f"{rounds} rounds ABBA after a warm-up",
            "",
            "| side | median s | ratio robench / loop (median of rounds) | fastest rounds |"
            " predictions equal |",
            "|---|---:|---:|---:|---|",
            f"| bare loop (`from_pretrained`, processor, forward) | {result['loop_s']:.2f} | | | |",
            f"| `robench eval hf:DIR` (clean suite) | {result['robench_s']:.2f} | "
            f"{result['ratio']:.3f} | {result['fastest_ratio']:.3f} | {result['equal']} |",
            "",
            f"Per-batch work alternating batch by batch (`interleaved`, median of {rounds} "
            f"passes): robench / loop = {statistics.median(passes):.3f}.",
            "",
            f"Spread: whole-run ratio per round {_listed(result['round_ratios'])}; "
            f"interleaved per pass {_listed(passes)}.",
            "",
            "Goal: ratio at least 0.95.",
            END,
        ]
    )
    write_section(args.output, section, START, END)
    print(section)


if __name__ == "__main__":
    main()
