"""GPU acceptance run: `make test-gpu`, then robench's real runner against bare library loops.

Run from the repository root on a machine with a CUDA GPU (the whole script is sized for 10
minutes on one H100; every phase writes its numbers when it ends, so a run cut off still
reports what it finished):

    .venv/bin/python benchmarks/bench_gpu.py              # writes reports/benchmarks.md
    .venv/bin/python benchmarks/bench_gpu.py --device cpu --quick --output /tmp/gpu.md

A GPU machine that comes with its own PyTorch (2.11 or newer) and none of robench's other
dependencies (the H200 of reports/benchmarks.md, 2026-11-28: Python 3.12, torch 2.11):
`bash benchmarks/gpu_prepare.sh` downloads, on a machine with the internet, the wheels it
lacks (pyautoattack's repacked without its 45 MB example checkpoint) into .whl/ and copies
Fashion-MNIST's test split into .gpu/fmnist/; copy those and the checkout over, and there
`OUT=FOLDER bash benchmarks/gpu_acceptance.sh` installs them beside the machine's torch
(`pip install --no-index --no-deps --target /tmp/site .whl/*.whl`, robench from the checkout
on PYTHONPATH) and runs this script's phases, the throughput alone on the GPU first.

Phases, in order (`--phases` picks some):

1. `tests`: `pytest -m gpu` (what `make test-gpu` runs), its summary line recorded and its log
   beside the JSON (OUTPUT.tests.log).
2. `certify`: `robench.evaluate` of randomized smoothing on DeiT-tiny: seconds per sample and
   the peak GPU memory above what was allocated before.
3. `throughput`: for DeiT-tiny and DeiT-small at 224x224, the baseline (timm) and its
   Elliptical twin (robench), random weights seeded as `robench eval --seed 0` seeds them:
   seeded random images written as PNG files into an image folder, each labelled with the
   model's own top-1 prediction (clean accuracy 100%, so every attack starts on every point);
   `robench eval` (a subprocess, the real runner: data loading, seeding, checks, OOM
   splitting, scoring) runs clean, PGD-20 and AutoAttack standard, each attack of AutoAttack
   also alone so that APGD-T, FAB-T and Square run on every point (in the sequential standard
   evaluation APGD-CE leaves them nothing on random weights). Images/s come from each result's
   `wall_time_s` in the report. Beside each, the bare loop on the same model, images and batch
   size: a forward pass (clean), torchattacks' PGD, pyautoattack's AutoAttack, then the
   scoring pass; the ratio robench / bare is what the acceptance asks to be >= 0.9.
   `--models` picks some of the four (each model's rows are written as soon as it ends).
   Then, per model, clean and PGD-20 "warm in memory": `robench.evaluate` on float tensors in
   CPU memory, the second of two calls, beside the bare loop on the same tensors after one
   untimed batch (the runner's own cost, without PNG decoding and a process's first CUDA work).
4. `warm`: those warm in-memory rows alone (no image folder, no `robench eval`).

Without a CUDA device, `--device cuda` (the default) measures nothing: it writes the section
with every row "not measured" and the reason, and exits 0. A CPU run (`--device cpu`, meant
only to prove the code works; tests/test_bench_gpu.py runs it with --quick) must name its
`--output`, so CPU numbers never land in the report as GPU numbers.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch
from report_sections import cpu_name, load_average, write_section

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "reports" / "benchmarks.md"
START, END = "<!-- bench_gpu -->", "<!-- /bench_gpu -->"
MODELS = (
    "deit_tiny_patch16_224",
    "deit_tiny_elliptical_patch16_224",
    "deit_small_patch16_224",
    "deit_small_elliptical_patch16_224",
)
QUICK_MODELS = MODELS[:1]
# --quick runs these workloads only (the standard AutoAttack runs each of its four attacks).
QUICK_WORKLOADS = ("clean", "pgd-20", "autoattack")
EPS = 4 / 255  # L-inf budget of the paper's DeiT experiments
NOT_MEASURED = "not measured"
GPU_COMMAND = "python benchmarks/bench_gpu.py"
SEED = 0
CLASSES = 1000


@dataclass(frozen=True)
class Workload:
    entry: dict[str, Any]  # the suite entry robench runs
    images: int  # images on a GPU
    quick_images: int  # images with --quick
    # Overrides that keep a --quick CPU run short (fewer iterations and queries).
    quick: dict[str, Any] = field(default_factory=dict)


_AA = {"kind": "autoattack", "eps": EPS, "norm": "linf"}
_AA_QUICK = {"n_iter": 2, "n_queries": 4, "n_target_classes": 1}
WORKLOADS: dict[str, Workload] = {
    "clean": Workload({"kind": "clean"}, 1024, 4),
    "pgd-20": Workload(
        {"kind": "pgd", "eps": EPS, "steps": 20, "step_size": 1 / 255, "random_start": True},
        256,
        2,
        {"steps": 2},
    ),
    **{
        name: Workload({**_AA, "version": "custom", "attacks": [name]}, 64, 2, _AA_QUICK)
        for name in ("apgd-ce", "apgd-t", "fab-t", "square")
    },
    "autoattack": Workload({**_AA, "version": "standard"}, 64, 2, _AA_QUICK),
}


def _package(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "absent"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Results:
    """What the phases measured so far; `save` writes it after every phase."""

    args: argparse.Namespace
    started: datetime.datetime
    device_name: str
    tests: str | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)  # throughput, one per result
    certify: dict[str, Any] | None = None
    loads: list[str] = field(default_factory=list)

    def save(self) -> None:
        payload = {"device": self.device_name, "tests": self.tests, "rows": self.rows}
        payload["certify"] = self.certify
        self.args.json.write_text(json.dumps(payload, indent=2) + "\n")
        write_section(self.args.output, measured_section(self), START, END)


# --- throughput: the data robench eval reads ---------------------------------------------


def load_seeded(name: str, device: torch.device) -> torch.nn.Module:
    """The model as `robench eval NAME --allow-random-weights --seed 0` builds it."""
    from robench._core.seeding import seed_everything
    from robench.models.loading import load_model

    seed_everything(SEED)
    return load_model(name, device=device).model.eval()


def make_images(n: int, model: torch.nn.Module, device: torch.device, batch: int) -> Any:
    """`n` seeded random uint8 images (n, 3, 224, 224) and the model's top-1 label of each."""
    generator = torch.Generator().manual_seed(n)
    pixels = torch.randint(0, 256, (n, 3, 224, 224), dtype=torch.uint8, generator=generator)
    labels = []
    with torch.inference_mode():
        for chunk in pixels.split(batch):
            labels.append(model(chunk.to(device).float().div(255)).argmax(-1).cpu())
    return pixels, torch.cat(labels)


def write_folder(root: Path, pixels: torch.Tensor, labels: torch.Tensor) -> Path:
    """An image folder of PNG files, one class folder per label, and its class map (all
    ImageNet-size classes, so the folder's indices are the model's)."""
    from PIL import Image

    names = [f"c{i:04d}" for i in range(CLASSES)]
    for i, (image, label) in enumerate(zip(pixels, labels.tolist(), strict=True)):
        folder = root / names[label]
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(image.permute(1, 2, 0).numpy()).save(folder / f"{i:05d}.png")
    class_map = root.parent / f"{root.name}.classes.txt"
    class_map.write_text("\n".join(names) + "\n")
    return class_map


def write_suite(path: Path, quick: bool) -> None:
    """The suite robench runs: every workload, each on its first `images` samples."""
    lines = ['name = "bench-gpu"', "version = 1", ""]
    for name, workload in WORKLOADS.items():
        if quick and name not in QUICK_WORKLOADS:
            continue
        entry = {**workload.entry, **(workload.quick if quick else {}), "name": name}
        entry["max_samples"] = workload.quick_images if quick else workload.images
        lines.append("[[perturbations]]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in entry.items()]
        lines.append("")
    path.write_text("\n".join(lines))


def robench_eval(args: argparse.Namespace, name: str, work: Path, folder: Path) -> Any:
    """`robench eval` in a subprocess; the report it wrote."""
    from robench.results.report.schema import Report

    out = work / f"{name}.json"
    command = [
        *(sys.executable, "-m", "robench", "eval", name, "--allow-random-weights"),
        *("-s", str(work / "suite.toml"), "--data", str(folder)),
        *("--class-map", str(work / f"{folder.name}.classes.txt"), "--crop-pct", "1.0"),
        *("-b", str(args.batch_size), "--device", args.device, "--seed", str(SEED)),
        *("-o", str(out), "--overwrite", "--format", "markdown"),
    ]
    subprocess.run(command, check=True, cwd=work, stdout=subprocess.DEVNULL)
    return Report.model_validate_json(out.read_text())


# --- throughput: the bare loops ------------------------------------------------------------


def _bare_clean(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x


def _bare_pgd(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, steps: int) -> Any:
    import torchattacks

    return torchattacks.PGD(model, eps=EPS, alpha=1 / 255, steps=steps, random_start=True)(x, y)


def _bare_autoattack(
    model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, entry: dict[str, Any]
) -> Any:
    from pyautoattack import AutoAttack

    # pyautoattack's device defaults to "cpu": name the batch's device, as robench does.
    attack = AutoAttack(
        model, norm="Linf", eps=EPS, version=entry["version"], seed=SEED, device=x.device
    )
    attack.verbose = False
    if entry.get("attacks"):
        attack.attacks_to_run = list(entry["attacks"])
    _cut_short(attack, entry)
    adv, _ = attack.run_standard_evaluation(x, y, batch_size=len(x))
    return adv


def _cut_short(attack: Any, entry: dict[str, Any]) -> None:
    """--quick's fewer iterations, queries and targets, set as robench sets them."""
    if "n_iter" in entry:
        for apgd in (attack.apgd, attack.apgd_targeted):
            apgd.n_iter = apgd.n_iter_orig = entry["n_iter"]
            apgd.n_iter_2 = max(int(0.22 * entry["n_iter"]), 1)
            apgd.n_iter_min = max(int(0.06 * entry["n_iter"]), 1)
            apgd.size_decr = max(int(0.03 * entry["n_iter"]), 1)
        attack.fab.n_iter = entry["n_iter"]
    if "n_queries" in entry:
        attack.square.n_queries = entry["n_queries"]
    if "n_target_classes" in entry:
        attack.apgd_targeted.n_target_classes = entry["n_target_classes"]
        attack.fab.n_target_classes = entry["n_target_classes"]


def bare_attack(name: str, entry: dict[str, Any]) -> Callable[..., torch.Tensor]:
    """The bare loop's attack for workload `name` (entry: its suite entry)."""
    if name == "clean":
        return _bare_clean
    if name == "pgd-20":
        return lambda model, x, y: _bare_pgd(model, x, y, entry["steps"])
    return lambda model, x, y: _bare_autoattack(model, x, y, entry)


def bare_seconds(
    attack: Callable[..., torch.Tensor],
    model: torch.nn.Module,
    pixels: torch.Tensor,
    labels: torch.Tensor,
    batch: int,
    device: torch.device,
    warm: bool = False,
) -> tuple[float, int]:
    """Seconds to attack and score every batch (synchronised), and the points still correct.
    `pixels`: uint8 (made float on the device) or float in [0, 1] (copied as they are);
    `warm`: attack the first batch once, untimed, as robench's timed second call is warm."""
    batches = list(zip(pixels.split(batch), labels.split(batch), strict=True))

    def inputs(x: torch.Tensor) -> torch.Tensor:
        x = x.to(device)
        return x.float().div(255) if x.dtype == torch.uint8 else x

    if warm:
        attack(model, inputs(batches[0][0]), batches[0][1].to(device))
    _sync(device)
    start, correct = time.perf_counter(), 0
    for x_given, y in batches:
        x, y = inputs(x_given), y.to(device)
        adversarial = attack(model, x, y)
        with torch.inference_mode():
            correct += int((model(adversarial).argmax(-1) == y).sum())
    _sync(device)
    return time.perf_counter() - start, correct


def _row(name: str, workload: str, result: Any, seconds: float, correct: int) -> dict[str, Any]:
    count = result.n_samples
    ours = count / result.wall_time_s if result.wall_time_s > 0 else float("nan")
    return {
        "model": name,
        "workload": workload,
        "images": count,
        "robench_images_per_s": ours,
        "bare_images_per_s": count / seconds,
        "ratio": ours * seconds / count,
        "robench_top1": result.metrics["top1"].value,
        "bare_still_correct": correct,
    }


# --- phases --------------------------------------------------------------------------------


def phase_tests(results: Results) -> None:
    """`pytest -m gpu`, its log beside the JSON. A GPU machine with its own PyTorch often lacks
    test-only packages (jsonschema, ...) that other test modules import: their collection
    errors are kept out of the verdict (and counted in the summary line) rather than stop
    the gpu tests."""
    log = results.args.json.with_suffix(".tests.log")
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-v", "-rs", "-p", "no:cacheprovider"]
    with log.open("w") as stream:
        found = subprocess.run(
            [*command, "--continue-on-collection-errors"],
            cwd=ROOT,
            stdout=stream,
            stderr=subprocess.STDOUT,
            text=True,
        )
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    results.tests = f"exit {found.returncode}: {lines[-1] if lines else 'no output'}"


def phase_throughput(results: Results, device: torch.device, work: Path) -> None:
    args = results.args
    write_suite(work / "suite.toml", args.quick)
    n = max(w.quick_images if args.quick else w.images for w in WORKLOADS.values())
    for name in QUICK_MODELS if args.quick else args.models:
        model = load_seeded(name, device)
        pixels, labels = make_images(n, model, device, args.batch_size)
        write_folder(work / name, pixels, labels)
        report = robench_eval(args, name, work, work / name)
        for result in report.results:
            workload = WORKLOADS[result.name]
            entry = {**workload.entry, **(workload.quick if args.quick else {})}
            count = result.n_samples
            attack = bare_attack(result.name, entry)
            timed = bare_seconds(
                attack, model, pixels[:count], labels[:count], args.batch_size, device
            )
            results.rows.append(_row(name, result.name, result, *timed))
        results.rows += in_memory_rows(args, name, model, pixels, labels, device)
        results.save()  # each model's rows as soon as they exist


def phase_warm(results: Results, device: torch.device) -> None:
    """The in-memory rows alone (`in_memory_rows`), without `robench eval`'s PNG folder."""
    args = results.args
    n = max(WORKLOADS[w].quick_images if args.quick else WORKLOADS[w].images for w in IN_MEMORY)
    for name in QUICK_MODELS if args.quick else args.models:
        model = load_seeded(name, device)
        pixels, labels = make_images(n, model, device, args.batch_size)
        results.rows += in_memory_rows(args, name, model, pixels, labels, device)
        results.save()


# Workloads also timed through `robench.evaluate` in memory, warm, as "NAME, warm in memory".
IN_MEMORY = ("clean", "pgd-20")


def in_memory_rows(
    args: argparse.Namespace,
    name: str,
    model: torch.nn.Module,
    pixels: torch.Tensor,
    labels: torch.Tensor,
    device: torch.device,
) -> list[dict[str, Any]]:
    """Each IN_MEMORY workload through `robench.evaluate` on float tensors in CPU memory, the
    second of two calls, beside the bare loop on the same tensors after one untimed batch:
    the runner's own cost, without the PNG decoding and the process's first CUDA work (cuDNN,
    cuBLAS and autograd set-up) that `robench eval`'s rows pay and a bare loop run later in
    this process does not."""
    import robench

    rows = []
    for workload_name in IN_MEMORY:
        workload = WORKLOADS[workload_name]
        entry = {**workload.entry, **(workload.quick if args.quick else {})}
        count = workload.quick_images if args.quick else workload.images
        x, y = pixels[:count].float().div(255), labels[:count]
        for _ in range(2):
            report = robench.evaluate(
                model,
                [{**entry, "name": workload_name}],
                (x, y),
                model_name="bench",
                batch_size=args.batch_size,
                seed=SEED,
                progress=False,
            )
        attack = bare_attack(workload_name, entry)
        timed = bare_seconds(attack, model, x, y, args.batch_size, device, warm=True)
        rows.append(_row(name, f"{workload_name}, warm in memory", report.results[0], *timed))
    return rows


def phase_certify(results: Results, device: torch.device) -> None:
    import robench

    args = results.args
    model = load_seeded(MODELS[0], device)
    n, count, n0, batch = (2, 20, 4, 12) if args.quick else (32, 10_000, 100, 1000)
    pixels, labels = make_images(n, model, device, args.batch_size)
    entry = {"kind": "randomized-smoothing", "name": "rs", "sigma": 0.25, "n0": n0, "n": count}
    entry["batch"] = batch
    resident = 0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        resident = torch.cuda.memory_allocated(device)
    report = robench.evaluate(
        model,
        [entry],
        (pixels.float().div(255), labels),
        model_name=MODELS[0],
        batch_size=args.batch_size,
        device=args.device,
        seed=SEED,
        progress=False,
    )
    (result,) = report.results
    peak = None
    if device.type == "cuda":
        peak = (torch.cuda.max_memory_allocated(device) - resident) / 2**30
    results.certify = {
        "model": MODELS[0],
        "samples": result.n_samples,
        "n": count,
        "seconds_per_sample": result.wall_time_s / result.n_samples,
        "peak_gib_above_resident": peak,
        "precision": report.environment.precision,
    }
    results.save()


# --- the report section ---------------------------------------------------------------------


def _header(device: str, started: datetime.datetime) -> list[str]:
    return [
        START,
        "## GPU acceptance: make test-gpu, robench eval vs bare library loops "
        "(benchmarks/bench_gpu.py)",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} UTC",
        f"- device: {device}; torch {torch.__version__}, timm {_package('timm')}, "
        f"torchattacks {_package('torchattacks')}, pyautoattack {_package('pyautoattack')}",
        "- models: DeiT-tiny and DeiT-small at 224x224, the baseline (timm) and the Elliptical "
        "twin (robench), random weights seeded as `robench eval --seed 0`; IEEE float32",
        "- throughput: `robench eval` (image folder of PNGs, the real runner) against the bare "
        "torchattacks / pyautoattack loop on the same model, images and batch size; labels: "
        "each model's top-1, so every attack starts on every point",
    ]


TABLE_HEAD = [
    "| model | workload | images | robench images/s | bare images/s | robench / bare "
    "| robench top-1 after | bare still correct |",
    "|---|---|---:|---:|---:|---:|---:|---:|",
]


def not_measured_section(reason: str, started: datetime.datetime) -> str:
    """The section when no GPU could be used: every (model, workload) row "not measured"."""
    lines = [*_header("no CUDA device", started), ""]
    lines += [f"**Not measured.** {reason}", "", *TABLE_HEAD]
    for model in MODELS:
        for workload in WORKLOADS:
            cells = [f"`{model}`", workload, *[NOT_MEASURED] * 6]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"- make test-gpu: {NOT_MEASURED}", f"- certify: {NOT_MEASURED}", END]
    return "\n".join(lines)


def _rate(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.3g}"


def measured_section(results: Results) -> str:
    args = results.args
    command = f"{GPU_COMMAND} --device {args.device}{' --quick' if args.quick else ''}"
    lines = [
        *_header(results.device_name, results.started),
        f"- command: `{command}`; batch {args.batch_size}; load average before: "
        f"{results.loads[0] if results.loads else 'n/a'}",
        "",
        *TABLE_HEAD,
    ]
    for row in results.rows:
        lines.append(
            f"| `{row['model']}` | {row['workload']} | {row['images']} | "
            f"{_rate(row['robench_images_per_s'])} | {_rate(row['bare_images_per_s'])} | "
            f"{row['ratio']:.2f} | {row['robench_top1']:.3f} | {row['bare_still_correct']} / "
            f"{row['images']} |"
        )
    lines += ["", f"- make test-gpu: {results.tests or NOT_MEASURED}"]
    certify = results.certify
    if certify is None:
        lines.append(f"- certify: {NOT_MEASURED}")
    else:
        peak = certify["peak_gib_above_resident"]
        lines.append(
            f"- certify (`robench.evaluate`, randomized smoothing, n = {certify['n']}, "
            f"{certify['samples']} samples of `{certify['model']}`): "
            f"{certify['seconds_per_sample']:.3g} s per sample, peak memory above resident "
            f"{'n/a' if peak is None else f'{peak:.2f} GiB'}"
        )
    if torch.device(args.device).type != "cuda":
        lines += ["", "**CPU run: these numbers only show that the code runs; not GPU numbers.**"]
    lines.append(END)
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument("--batch-size", type=int, default=128, help="images per batch (128)")
    parser.add_argument(
        "--phases",
        nargs="+",
        choices=("tests", "throughput", "warm", "certify"),
        default=["tests", "throughput", "certify"],
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the DeiT-tiny baseline only, a few images, batch 2, clean, PGD and AutoAttack "
        "standard cut short: proves every phase runs (e.g. on CPU), times nothing worth "
        "reading; skips the tests phase off CUDA",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=MODELS,
        default=list(MODELS),
        help="the throughput phase's models, in this order (default: all four)",
    )
    parser.add_argument("--output", type=Path, help="file to write the section into")
    parser.add_argument("--json", type=Path, help="the numbers as JSON (default: OUTPUT.json)")
    args = parser.parse_args(argv)
    if args.quick:
        args.batch_size = 2
        if not args.device.startswith("cuda") and "tests" in args.phases:
            args.phases.remove("tests")
    if args.output is None:
        if not args.device.startswith("cuda"):
            parser.error("a CPU run must name --output: CPU numbers never go into the report")
        args.output = REPORT
    args.json = args.json or args.output.with_suffix(".json")
    return args


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})"
    return f"CPU {cpu_name()}, {torch.get_num_threads()} threads"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        reason = (
            "No CUDA device on this machine (`torch.cuda.is_available()` is False): the task "
            "that wrote this section was not lent a GPU, so no throughput was measured. To "
            f"measure, run `{GPU_COMMAND}` on a machine with a CUDA GPU."
        )
        section = not_measured_section(reason, started)
        print(section)
        write_section(args.output, section, START, END)
        return 0
    results = Results(args, started, _device_name(device), loads=[load_average()])
    results.save()
    with tempfile.TemporaryDirectory(prefix="bench_gpu_") as work:
        if "tests" in args.phases:
            phase_tests(results)
            results.save()
        if "certify" in args.phases:  # short: before the long phase a cut-off run loses
            phase_certify(results, device)
        if "throughput" in args.phases:
            phase_throughput(results, device, Path(work))
        if "warm" in args.phases:  # already in the throughput phase's rows
            phase_warm(results, device)
    print(measured_section(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
