# ruff: noqa: E501  (the case table keeps one case per line, like the rows it mirrors)
"""Every error in docs/errors.md, answered as documented: one case per row of its table.

Each case runs the real CLI on a small hostile input and checks the row's exit code and
phrase, exactly one `error:` line, no traceback, and that nothing was left behind: no report,
no per-sample file, no temporary file, every input file byte-for-byte unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

from robench.cli import app
from tests.lra_fixtures import (
    bad_listops,
    listops_too_long,
    pathfinder_without_metadata,
    retrieval_with_one_document,
    write_listops,
)

ROOT = Path(__file__).resolve().parents[1]
MODEL = "vit_nano_fmnist"
CHECKPOINT = ROOT / "models" / f"{MODEL}.safetensors"
CLEAN_SUITE = 'name = "clean"\nversion = 1\n\n[[perturbations]]\nkind = "clean"\n'


def _rows() -> dict[str, dict[str, str]]:
    """docs/errors.md's table: id -> {situation, exit, phrase, fix}."""
    rows = {}
    for line in (ROOT / "docs" / "errors.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or line.startswith(("| id ", "|---")):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        assert len(cells) == 5, f"docs/errors.md row has {len(cells)} cells: {line}"
        assert cells[0] not in rows, f"docs/errors.md lists {cells[0]} twice"
        rows[cells[0]] = dict(zip(("situation", "exit", "phrase", "fix"), cells[1:], strict=True))
    return rows


ROWS = _rows()


@dataclass
class Case:
    args: list[str]
    prefix: str = "error:"  # the start of the one line the error is reported on
    traceback: bool = False  # --debug: a traceback is expected as well
    read_only: Path | None = None  # a directory the case pretends is not writable
    absent: list[str] = field(default_factory=list)  # phrases that must not appear
    # robench attributes the case replaces for its run (a simulated fault), restored after
    patches: dict[str, object] = field(default_factory=dict)


def _png(path: Path, seed: int, size: int = 28) -> None:
    pixels = np.random.default_rng(seed).integers(0, 255, (size, size), dtype=np.uint8)
    Image.fromarray(pixels).save(path)


def _image_folder(root: Path, classes: int = 10, per_class: int = 2, seed: int = 0) -> Path:
    for c in range(classes):
        (root / str(c)).mkdir(parents=True)
        for i in range(per_class):
            _png(root / str(c) / f"{i}.png", seed * 1000 + c * 10 + i)
    return root


def _bomb_png(path: Path) -> None:
    """A PNG whose header claims 20000x20000 pixels: PIL refuses it on open."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 20000, 20000, 8, 0, 0, 0, 0)
    idat = zlib.compress(b"\0" * 64)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shared read-only inputs; each case copies what it needs into its own tmp_path."""
    root = tmp_path_factory.mktemp("catalogue")
    _image_folder(root / "imgs")
    _image_folder(root / "imgs2", seed=1)
    shutil.copytree(root / "imgs", root / "bad")
    (root / "bad" / "9" / "1.png").write_bytes(b"not a png")  # the last batch with -b 4
    shutil.copytree(root / "imgs", root / "bomb")
    _bomb_png(root / "bomb" / "9" / "1.png")
    _image_folder(root / "one", classes=1)
    _image_folder(root / "eleven", classes=11, per_class=1)
    (root / "clean.toml").write_text(CLEAN_SUITE, encoding="utf-8")
    # A finished run on `imgs`, for the --resume cases.
    runs = root / "prior"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            MODEL,
            "-s",
            str(root / "clean.toml"),
            "-d",
            str(root / "imgs"),
            "--limit",
            "8",
            "-o",
            str(runs / "r.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    return root


# ListOps in the released layout (basic_test.tsv), for a random-weight model of 48 positions.
LRA_MODEL = '{"vocab_size": 16, "num_classes": 10, "pad_id": 0, "max_length": 48}'
SEGMENTATION_NOISE = (
    'task = "semantic-segmentation"\n[[perturbations]]\nkind = "pixel-noise"\nstd = "8/255"\n'
)
LRA_NOISE = 'task = "sequence-classification"\n[[perturbations]]\nkind = "clean"\n[[perturbations]]\nkind = "pixel-noise"\nstd = "8/255"\n'


def _lra_eval(tmp: Path, suite: str, longer_than_model: bool) -> list[str]:
    data = tmp / "listops"
    write_listops(data, rows=8, max_tokens=48)
    if longer_than_model:  # one expression of 62 tokens
        with (data / "basic_test.tsv").open("a") as handle:
            handle.write("( [SM " + " ".join(str(i % 10) for i in range(60)) + " ] )\t0\n")
    model = ["lra_transformer_nano", "--model-kwargs", LRA_MODEL, "--allow-random-weights"]
    return [
        "eval",
        *model,
        "-s",
        suite,
        "--lra-task",
        "listops",
        "-d",
        str(data),
        "-o",
        str(tmp / "out" / "r.json"),
    ]


def _suite(tmp: Path, body: str, name: str = "s.toml") -> str:
    path = tmp / name
    path.write_text('name = "s"\nversion = 1\n' + body, encoding="utf-8")
    return str(path)


def _fgsm(eps: str) -> str:
    return f'\n[[perturbations]]\nkind = "fgsm"\neps = {eps}\n'


def _prior(tmp: Path, data: Path) -> str:
    """A copy of the finished run's per-sample file where this case's report goes."""
    (tmp / "out").mkdir(exist_ok=True)
    shutil.copy(data / "prior" / "r.samples.jsonl", tmp / "out" / "r.samples.jsonl")
    return str(tmp / "out" / "r.json")


def _eval(tmp: Path, data: Path, *extra: str, folder: str = "imgs") -> list[str]:
    """`robench eval` of the shipped model on a copy of the clean suite and an image folder."""
    suite = tmp / "clean.toml"
    if not suite.exists():
        suite.write_text(CLEAN_SUITE, encoding="utf-8")
    out = ["-o", str(tmp / "out" / "r.json")] if "-o" not in extra else []
    return ["eval", MODEL, "-s", str(suite), "-d", str(data / folder), *out, *extra]


def _report(tmp: Path, data: Path, name: str, change: Callable[[dict], None] | None) -> str:
    report = json.loads((data / "prior" / "r.json").read_text(encoding="utf-8"))
    if change is not None:
        change(report)
    (tmp / name).write_text(json.dumps(report), encoding="utf-8")
    return str(tmp / name)


def _set(report: dict, path: str, value: object) -> None:
    *parents, last = path.split(".")
    for key in parents:
        report = report[key]
    report[last] = value


def _truncated_torch(tmp: Path) -> str:
    torch.save({"w": torch.zeros(64)}, tmp / "full.pt")
    raw = (tmp / "full.pt").read_bytes()
    (tmp / "cut.pt").write_bytes(raw[: len(raw) // 2])
    (tmp / "full.pt").unlink()
    return str(tmp / "cut.pt")


def _pickled_objects(tmp: Path) -> str:
    import datetime

    torch.save({"saved": datetime.date(2020, 1, 1)}, tmp / "objects.pt")
    return str(tmp / "objects.pt")


def _checkpoint_copy(tmp: Path) -> str:
    shutil.copy(CHECKPOINT, tmp / "model.safetensors")
    return str(tmp / "model.safetensors")


def _write(path: Path, content: str | bytes) -> str:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def _lra(tmp: Path, write: Callable[[Path], str]) -> str:
    """An LRA layout with one thing wrong (tests/lra_fixtures.py), found by its layout's
    detector when `robench eval` opens it."""
    write(tmp / "lra")
    return str(tmp / "lra")


def _corrupt_middle_line(tmp: Path, data: Path) -> str:
    out = _prior(tmp, data)
    store = tmp / "out" / "r.samples.jsonl"
    lines = store.read_text(encoding="utf-8").splitlines()
    lines.insert(2, '{"p": "clean", "i": [0, 1')  # a damaged line with whole batches after it
    store.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _interrupted(tmp: Path, data: Path) -> str:
    out = _prior(tmp, data)
    store = tmp / "out" / "r.samples.jsonl"
    lines = store.read_text(encoding="utf-8").splitlines()
    store.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # no completion marker
    return out


def _all_unreadable(tmp: Path) -> str:
    """An image folder of 10 classes whose every image is unreadable."""
    for c in range(10):
        (tmp / "unreadable" / str(c)).mkdir(parents=True)
        (tmp / "unreadable" / str(c) / "0.png").write_bytes(b"not a png")
    return str(tmp / "unreadable")


def _folder(path: Path) -> str:
    path.mkdir()
    return str(path)


def _config(tmp: Path, config: dict) -> str:
    """A folder holding only a config.json (what `hf:` and `local-dir:` read first)."""
    (tmp / "model").mkdir()
    _write(tmp / "model" / "config.json", json.dumps(config))
    return str(tmp / "model")


def _cut_weights(tmp: Path) -> str:
    """A transformers ViT folder whose model.safetensors is 10 bytes of a cut-off file."""
    folder = _config(tmp, {"model_type": "vit", "architectures": ["ViTForImageClassification"]})
    _write(Path(folder) / "model.safetensors", b"\x10" + b"\0" * 9)
    return folder


def _plugin(tmp: Path) -> str:
    return _write(tmp / "plugin.py", "import sys\n\nsys.exit(0)\n")


def _nan_checkpoint(tmp: Path) -> str:
    """The shipped model's weights, diverged to NaN."""
    from safetensors.torch import load_file, save_file

    weights = {k: torch.full_like(v, float("nan")) for k, v in load_file(CHECKPOINT).items()}
    save_file(weights, tmp / "nan.safetensors")
    return str(tmp / "nan.safetensors")


# Plugins that fail in their own code: each error names the plugin and its file. What they
# register stays registered for the rest of the session, so each fails only when asked for
# by name (or, the detector, on a folder marked for it).
PLUGIN_GHOST_KIND = 'from robench.registry import register_perturbation, PerturbationParams\n\nclass P(PerturbationParams):\n    pass\n\nregister_perturbation("ghost", "no_such_module_for_robench:Ghost")(P)\n'
PLUGIN_FORMAT_NONE = 'from robench.registry import register_format\n\n@register_format("gate", "nothing", ".txt")\ndef render(result, strict):\n    return None\n'
PLUGIN_SOURCE_JUNK = 'from robench.registry import register_source\n\nregister_source("junk", f"{__name__}:build", "returns junk", "junk:x")\n\ndef build(request):\n    return 42\n'
PLUGIN_DETECTOR = 'from robench.registry import register_dataset\n\ndef opener(*args):\n    raise RuntimeError("never")\n\ndef detect(root):\n    if (root / "raise-here").exists():\n        raise KeyError("detector bug")\n    return False\n\nregister_dataset("boom", opener, detect=detect, shape="x")\n'
CERTIFY_ONLY = '\n[[perturbations]]\nkind = "clean"\n\n[[perturbations]]\nkind = "randomized-smoothing"\nsigma = 0.25\nn0 = 4\nn = 8\nbatch = 8\n'


def _header_only_listops(tmp: Path) -> str:
    write_listops(tmp / "header-only", rows=0)
    return str(tmp / "header-only")


def _out_of_memory(*args: object, **kwargs: object) -> None:
    """CUDA running out of memory, simulated on this CPU."""
    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB")


# Out of GPU memory in the checks before the run, or on every batch of the run (the model
# prepare_model returns), down to a single sample.
OOM_IN_CHECKS = {
    "robench.tasks.image_classification.ImageClassification.check_data": _out_of_memory
}
OOM_IN_RUN = {"robench.evaluation.request.prepare_model": lambda *args: _out_of_memory}


# id -> (tmp_path, shared data) -> the case; one per row of docs/errors.md.
CASES: dict[str, Callable[[Path, Path], Case]] = {
    "usage-bad-int": lambda t, d: Case(_eval(t, d, "--limit", "abc")),
    "usage-unknown-option": lambda t, d: Case(_eval(t, d, "--bogus")),
    "usage-gate-second-report": lambda t, d: Case(["gate", "-b", _report(t, d, "a.json", None), _report(t, d, "b.json", None)]),
    "list-unknown-catalogue": lambda t, d: Case(["list", "colours"]),
    "debug-keeps-exit-code": lambda t, d: Case(["--debug", "eval", MODEL, "-s", "nope"], traceback=True),
    "unknown-model": lambda t, d: Case(["eval", "vit_nano_fmnst", "-s", "smoke"]),
    "model-folder-not-a-model": lambda t, d: Case(["eval", "hf:" + _folder(t / "empty"), "-s", "smoke"]),
    "model-folder-other-library": lambda t, d: Case(["eval", "local-dir:" + _config(t, {"model_type": "vit"}), "-s", "smoke"]),
    "hf-repo-not-cached": lambda t, d: Case(["eval", "hf:robench-tests/absent-model", "-s", "smoke"]),
    "hf-unknown-architecture": lambda t, d: Case(["eval", "hf:" + _config(t, {"model_type": "no-such-architecture"}), "-s", "smoke"]),
    "hf-remote-code": lambda t, d: Case(["eval", "hf:" + _config(t, {"model_type": "mine", "auto_map": {"AutoModelForImageClassification": "m.M"}}), "-s", "smoke"]),
    "hf-weights-truncated": lambda t, d: Case(["eval", "hf:" + _cut_weights(t), "-s", "smoke"]),
    "unknown-suite": lambda t, d: Case(["eval", MODEL, "-s", "smok"]),
    "suite-file-missing": lambda t, d: Case(["eval", MODEL, "-s", str(t / "missing.toml")]),
    "suite-syntax-error": lambda t, d: Case(["validate", _suite(t, "[[perturbations\n")], prefix="fail"),
    "suite-missing-key": lambda t, d: Case(["validate", _write(t / "s.toml", 'name = "s"\n[[perturbations]]\nkind = "clean"\n')], prefix="fail"),
    "suite-unknown-key": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, '\n[[perturbations]]\nkind = "fgsm"\nepsilon = "8/255"\n')]),
    "unknown-perturbation": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, '\n[[perturbations]]\nkind = "pgdd"\n')]),
    "eps-negative": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, _fgsm("-1"))]),
    "eps-not-a-number": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, _fgsm('"abc"'))]),
    "eps-division-by-zero": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, _fgsm('"1/0"'))]),
    "steps-zero": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, '\n[[perturbations]]\nkind = "pgd"\neps = "1/255"\nsteps = 0\n')]),
    "torchattacks-parameter-out-of-range": lambda t, d: Case(["validate", _suite(t, '\n[[perturbations]]\nkind = "torchattacks.PGD"\nsteps = -1\n')], prefix="fail"),
    "torchattacks-norm-unsupported": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, '\n[[perturbations]]\nkind = "torchattacks.FAB"\nnorm = "l1"\neps = 1.0\n')]),
    "torchattacks-unknown-attack": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, '\n[[perturbations]]\nkind = "torchattacks.CWW"\n')]),
    "torchattacks-unknown-parameter": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, '\n[[perturbations]]\nkind = "torchattacks.PGD"\nstepz = 3\n')]),
    "torchattacks-eps-unbounded": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, '\n[[perturbations]]\nkind = "torchattacks.CW"\neps = 0.5\n')]),
    "l0-budget-not-integer": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, '\n[[perturbations]]\nkind = "torchattacks.OnePixel"\neps = 2.5\n')]),
    "suite-sanity-eps": lambda t, d: Case([*_eval(t, d), "-s", _suite(t, 'sanity_eps = "abc"\n\n[[perturbations]]\nkind = "clean"\n')]),
    "sanity-eps-flag": lambda t, d: Case(_eval(t, d, "--sanity-eps", "abc")),
    "sanity-budget-flag": lambda t, d: Case(_eval(t, d, "--sanity-budget", "fast")),
    "suite-wrong-task": lambda t, d: Case([*_eval(t, d), "-s", "text-smoke"]),
    "calibration-metric-language-model": lambda t, d: Case(["eval", "transformer_lm_nano_pydocs", "-s", _suite(t, 'task = "language-modeling"\nmetrics = ["perplexity", "ece"]\n\n[[perturbations]]\nkind = "clean"\n'), "--data", "pydoc-topics", "-o", str(t / "out" / "r.json")]),
    "calibration-metric-segmentation": lambda t, d: Case(["eval", "segmenter_nano_baseline_scenes", "-s", _suite(t, 'task = "semantic-segmentation"\nmetrics = ["miou", "brier"]\n\n[[perturbations]]\nkind = "clean"\n'), "-o", str(t / "out" / "r.json")]),
    "validate-fail": lambda t, d: Case(["validate", _suite(t, '\n[[perturbations]]\nkind = "fgsm"\nepsilon = "8/255"\n' + "#" * 200 + "\n")], prefix="fail"),
    "card-input-size": lambda t, d: Case(["eval", _write(t / "card.toml", f'name = "c"\narchitecture = "vit_nano_patch4_28"\ninput_size = [1, 0, 28]\ncheckpoint = "{CHECKPOINT}"\n'), "-s", "smoke"]),
    "std-nan": lambda t, d: Case(_eval(t, d, "--std", "nan")),
    "crop-pct-out-of-range": lambda t, d: Case(_eval(t, d, "--crop-pct", "1.5")),
    "num-classes-zero": lambda t, d: Case(_eval(t, d, "--num-classes", "0")),
    "input-size-mismatch": lambda t, d: Case(_eval(t, d, "--input-size", "1,32,32")),
    "workers-negative": lambda t, d: Case(_eval(t, d, "--workers", "-1")),
    "batch-size-zero": lambda t, d: Case(_eval(t, d, "--batch-size", "0")),
    "train-option-out-of-range": lambda t, d: Case(["train", "vit_nano_patch4_28", "--lr", "-1", "-o", str(t / "out" / "tr")]),
    "train-no-full-batch": lambda t, d: Case(["train", "vit_nano_patch4_28", "--train-limit", "5", "-o", str(t / "out" / "tr")]),
    "train-out-dir-is-file": lambda t, d: Case(["train", "vit_nano_patch4_28", "-o", _write(t / "afile", "x")]),
    "generate-out-under-a-file": lambda t, d: Case(["generate", "lra-listops", str(Path(_write(t / "afile", "x")) / "sub")]),
    "limit-zero": lambda t, d: Case(_eval(t, d, "--limit", "0")),
    "limit-beyond-data": lambda t, d: Case(_eval(t, d, "--limit", "100000")),
    "limit-beyond-subset": lambda t, d: Case(_eval(t, d, "--subset", _write(t / "subset.txt", "0\n1\n2\n"), "--limit", "5")),
    "device-without-gpu": lambda t, d: Case(_eval(t, d, "--device", "cuda")),
    "gpu-memory-checks": lambda t, d: Case(_eval(t, d), patches=OOM_IN_CHECKS),
    "gpu-memory-single-sample": lambda t, d: Case(_eval(t, d, "-b", "4"), patches=OOM_IN_RUN),
    "plugin-exits": lambda t, d: Case(_eval(t, d, "--import", _plugin(t))),
    "plugin-missing": lambda t, d: Case(_eval(t, d, "--import", str(t / "missing.py"))),
    "plugin-lazy-missing": lambda t, d: Case(_eval(t, d, "-s", _suite(t, '\n[[perturbations]]\nkind = "ghost"\n'), "--import", _write(t / "ghost.py", PLUGIN_GHOST_KIND))),
    "plugin-renderer-returns-none": lambda t, d: Case(["gate", "-b", _report(t, d, "a.json", None), "-c", _report(t, d, "b.json", None), "--import", _write(t / "fmt.py", PLUGIN_FORMAT_NONE), "--output", f"nothing={t / 'gate.txt'}"]),
    "plugin-source-not-a-model": lambda t, d: Case(["eval", "junk:x", "-s", str(d / "clean.toml"), "-d", str(d / "imgs"), "--import", _write(t / "src.py", PLUGIN_SOURCE_JUNK), "-o", str(t / "out" / "r.json")]),
    "plugin-detector-raises": lambda t, d: Case(_eval(t, d, "--import", _write(t / "det.py", PLUGIN_DETECTOR), folder=_write(Path(_folder(t / "marked")) / "raise-here", "").rsplit("/", 1)[0])),
    "no-checkpoint": lambda t, d: Case(["eval", "vit_nano_patch4_28", "-s", str(d / "clean.toml"), "-d", str(d / "imgs"), "-o", str(t / "out" / "r.json")]),
    "surrogate-input-size": lambda t, d: Case(_eval(t, d, "-s", _suite(t, _fgsm('"1/255"')), "--surrogate", "resnet18", "--allow-random-weights")),
    "surrogate-classes": lambda t, d: Case(_eval(t, d, "-s", _suite(t, _fgsm('"1/255"')), "--surrogate", _write(t / "five.toml", 'name = "five"\narchitecture = "vit_nano_patch4_28"\nnum_classes = 5\n'), "--allow-random-weights")),
    "surrogate-not-an-attack": lambda t, d: Case(_eval(t, d, "-s", _suite(t, f'\n[[perturbations]]\nkind = "clean"\nsurrogate = "{MODEL}"\n'))),
    "surrogate-cannot-apply": lambda t, d: Case(_eval(t, d, "-s", _suite(t, CERTIFY_ONLY), "--surrogate", MODEL)),
    "surrogate-checkpoint-alone": lambda t, d: Case(_eval(t, d, "--surrogate-checkpoint", str(CHECKPOINT))),
    "checkpoint-missing": lambda t, d: Case(_eval(t, d, "-c", str(t / "missing.pt"))),
    "checkpoint-empty": lambda t, d: Case(_eval(t, d, "-c", _write(t / "empty.pt", b""))),
    "checkpoint-truncated": lambda t, d: Case(_eval(t, d, "-c", _truncated_torch(t))),
    "checkpoint-html": lambda t, d: Case(_eval(t, d, "-c", _write(t / "model.pt", "<!DOCTYPE html>\n<html><body>404 Not Found</body></html>\n")), absent=["--trust-checkpoint"]),
    "checkpoint-needs-trust": lambda t, d: Case(_eval(t, d, "-c", _pickled_objects(t))),
    "checkpoint-other-architecture": lambda t, d: Case(["eval", "resnet18", "-c", _checkpoint_copy(t), "-s", str(d / "clean.toml"), "-d", str(d / "imgs"), "-o", str(t / "out" / "r.json")]),
    "checkpoint-other-classes": lambda t, d: Case(_eval(t, d, "--num-classes", "5")),
    "model-kwargs-rejected": lambda t, d: Case(["eval", "fan_nano_fmnist", "-s", str(d / "clean.toml"), "-d", str(d / "imgs"), "--model-kwargs", '{"num_heads": 5}', "-o", str(t / "out" / "r.json")]),
    "model-nonfinite": lambda t, d: Case(_eval(t, d, "-c", _nan_checkpoint(t))),
    "data-no-samples": lambda t, d: Case([*_lra_eval(t, "lra-smoke", False)[:-4], "-d", _header_only_listops(t), "-o", str(t / "out" / "r.json")]),
    "data-missing": lambda t, d: Case(_eval(t, d, folder="missing")),
    "data-empty": lambda t, d: Case(_eval(t, d, folder=_folder(t / "empty"))),
    "data-is-file": lambda t, d: Case(_eval(t, d, folder="clean.toml")),
    "data-one-class": lambda t, d: Case(_eval(t, d, folder="one")),
    "data-labels-outside-model": lambda t, d: Case(_eval(t, d, folder="eleven")),
    "data-corrupt-image": lambda t, d: Case(_eval(t, d, "-b", "4", folder="bad")),
    "data-corrupt-image-workers": lambda t, d: Case(_eval(t, d, "-b", "4", "--workers", "2", folder="bad")),
    "data-decompression-bomb": lambda t, d: Case(_eval(t, d, "-b", "4", folder="bomb")),
    "text-data-not-utf8": lambda t, d: Case(["eval", "text_classifier_nano_baseline_docs", "-s", "text-classification-smoke", "-d", _write(t / "t.csv", "text,label\ncafé,faq\n".encode("latin-1")), "-o", str(t / "out" / "r.json")]),
    "text-data-missing-text": lambda t, d: Case(["eval", "text_classifier_nano_baseline_docs", "-s", "text-classification-smoke", "-d", _write(t / "t.jsonl", '{"text": "a", "label": "faq"}\n{"label": "faq"}\n'), "-o", str(t / "out" / "r.json")]),
    "lra-listops-unparseable": lambda t, d: Case(_eval(t, d, folder=_lra(t, bad_listops))),
    "lra-sequence-too-long": lambda t, d: Case(_eval(t, d, folder=_lra(t, listops_too_long))),
    "lra-retrieval-one-document": lambda t, d: Case(_eval(t, d, folder=_lra(t, retrieval_with_one_document))),
    "lra-pathfinder-no-metadata": lambda t, d: Case(_eval(t, d, folder=_lra(t, pathfinder_without_metadata))),
    "generate-not-empty": lambda t, d: Case(["generate", "lra-listops", _write(Path(_folder(t / "full")) / "keep.txt", "mine").rsplit("/", 1)[0]]),
    "lra-sequence-over-model-length": lambda t, d: Case(_lra_eval(t, "lra-smoke", True)),
    "lra-perturbation-other-task": lambda t, d: Case(_lra_eval(t, _suite(t, LRA_NOISE), False)),
    "perturbation-other-task": lambda t, d: Case(["eval", "segmenter_nano_baseline_scenes", "-s", _suite(t, SEGMENTATION_NOISE), "-o", str(t / "out" / "r.json")]),
    "bad-images-policy": lambda t, d: Case(_eval(t, d, "--bad-images", "ignore")),
    "bad-images-all-unreadable": lambda t, d: Case(_eval(t, d, "--bad-images", "skip", "--limit", "1", folder=_all_unreadable(t))),
    "out-is-checkpoint": lambda t, d: Case(["eval", MODEL, "-s", str(d / "clean.toml"), "-d", str(d / "imgs"), "-c", (c := _checkpoint_copy(t)), "-o", c]),
    "out-is-suite": lambda t, d: Case([*_eval(t, d), "-o", _write(t / "mine.toml", CLEAN_SUITE), "-s", str(t / "mine.toml")]),
    "out-in-data": lambda t, d: Case(["eval", MODEL, "-s", str(d / "clean.toml"), "-d", str(d / "imgs"), "-o", str(d / "imgs" / "r.json")]),
    "out-is-directory": lambda t, d: Case(_eval(t, d, "-o", str(t / "out"))),
    "out-read-only": lambda t, d: Case(_eval(t, d), read_only=t / "out"),
    "out-parent-is-file": lambda t, d: Case(_eval(t, d, "-o", str(Path(_write(t / "report.json", "{}")) / "r.json"))),
    "interrupted-run-exists": lambda t, d: Case(_eval(t, d, "--limit", "8", "-o", _interrupted(t, d))),
    "resume-and-overwrite": lambda t, d: Case(_eval(t, d, "--resume", "--overwrite")),
    "resume-without-store": lambda t, d: Case(_eval(t, d, "--resume")),
    "resume-other-std": lambda t, d: Case(_eval(t, d, "--limit", "8", "--resume", "--std", "0.5", "-o", _prior(t, d))),
    "resume-other-data": lambda t, d: Case(_eval(t, d, "--limit", "8", "--resume", "-o", _prior(t, d), folder="imgs2")),
    "resume-other-seed": lambda t, d: Case(_eval(t, d, "--limit", "8", "--resume", "--seed", "1", "-o", _prior(t, d))),
    "resume-other-limit": lambda t, d: Case(_eval(t, d, "--limit", "6", "--resume", "-o", _prior(t, d))),
    "resume-other-checkpoint": lambda t, d: Case(_eval(t, d, "--limit", "8", "--resume", "-c", str(ROOT / "models" / "vit_nano_elliptical_fmnist.safetensors"), "-o", _prior(t, d))),
    "resume-corrupt-line": lambda t, d: Case(_eval(t, d, "--limit", "8", "--resume", "-o", _corrupt_middle_line(t, d))),
    "amp-bad-value": lambda t, d: Case(_eval(t, d, "--amp", "fp8")),
    "resume-other-amp": lambda t, d: Case(_eval(t, d, "--limit", "8", "--resume", "--amp", "bf16", "-o", _prior(t, d))),
    "channels-last-language-model": lambda t, d: Case(["eval", "transformer_lm_nano_pydocs", "-s", "text-smoke", "--data", "pydoc-topics", "--limit", "2", "--channels-last", "-o", str(t / "out" / "r.json")]),
    "report-missing": lambda t, d: Case(["compare", str(t / "missing.json")]),
    "report-binary": lambda t, d: Case(["compare", _write(t / "binary.json", bytes(range(256)) * 4)]),
    "report-truncated": lambda t, d: Case(["compare", _write(t / "cut.json", (d / "prior" / "r.json").read_text(encoding="utf-8")[:300])]),
    "report-newer-schema": lambda t, d: Case(["compare", _report(t, d, "new.json", lambda r: _set(r, "schema_version", 99))]),
    "report-not-a-report": lambda t, d: Case(["compare", _write(t / "other.json", '{"hello": 1}')]),
    "gate-other-suite": lambda t, d: Case(["gate", "-b", _report(t, d, "a.json", None), "-c", _report(t, d, "b.json", lambda r: _set(r, "suite.name", "other"))]),
    "gate-sample-not-a-number": lambda t, d: Case(["gate", "-b", _report(t, d, "a.json", None), "-c", _report(t, d, "b.json", lambda r: r["samples"]["default"]["values"]["clean"]["nll"].__setitem__(1, "abc"))]),
    "gate-junit-directory": lambda t, d: Case(["gate", "-b", _report(t, d, "a.json", None), "-c", _report(t, d, "b.json", None), "--junit", str(t / "out")]),
    "gate-unknown-output-format": lambda t, d: Case(["gate", "-b", _report(t, d, "a.json", None), "-c", _report(t, d, "b.json", None), "--output", f"sumary={t / 'gate.md'}"]),
    "gate-output-not-name-path": lambda t, d: Case(["gate", "-b", _report(t, d, "a.json", None), "-c", _report(t, d, "b.json", None), "--output", str(t / "gate.md")]),
    "gate-writes-baseline": lambda t, d: Case(["gate", "--sequential", "-b", _report(t, d, "base.json", None), "--candidate-model", MODEL, "-c", str(t / "base.json")]),
    "compare-output-is-report": lambda t, d: Case(["compare", _report(t, d, "r.json", None), "-f", "markdown", "-o", str(t / "r.json")]),
    "sweep-negative-seed": lambda t, d: Case(["sweep", _write(t / "plan.toml", f'suites = ["smoke"]\nseeds = [-1]\n[[models]]\nmodel = "{MODEL}"\n')]),
}  # fmt: skip


def test_every_row_has_a_case_and_every_case_a_row() -> None:
    assert sorted(set(ROWS) - set(CASES)) == [], "rows of docs/errors.md without a case"
    assert sorted(set(CASES) - set(ROWS)) == [], "cases without a row in docs/errors.md"


def _snapshot(*roots: Path) -> dict[str, str]:
    """Every file under `roots` (hidden ones too) -> sha256 of its bytes."""
    files = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                files[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


@pytest.mark.parametrize("case_id", list(ROWS))
def test_error(case_id: str, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    row = ROWS[case_id]
    if case_id == "device-without-gpu" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    case = CASES[case_id](tmp_path, data)
    if case.read_only is not None:  # root ignores permissions: pretend the directory is 0555
        real_access, denied = os.access, str(case.read_only)
        monkeypatch.setattr(
            os, "access", lambda p, mode, **kw: str(p) != denied and real_access(p, mode, **kw)
        )
    for target, replacement in case.patches.items():
        monkeypatch.setattr(target, replacement)
    before = _snapshot(tmp_path, data)

    result = CliRunner().invoke(app, case.args)

    output = result.output
    assert result.exit_code == int(row["exit"]), output
    assert row["phrase"] in output, output
    lines = [line for line in output.splitlines() if line.startswith(case.prefix)]
    assert len(lines) == 1, output
    if not case.traceback:
        assert "Traceback" not in output, output
    for phrase in case.absent:
        assert phrase not in output, output
    assert _snapshot(tmp_path, data) == before, "files were written or changed"


def test_shipped_suite_name_wins_over_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An output folder named like a shipped suite neither shadows it nor breaks `list`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "smoke").mkdir()
    (tmp_path / "diagnostics").mkdir()
    listed = CliRunner().invoke(app, ["list", "suites"])
    assert listed.exit_code == 0, listed.output
    assert "smoke" in listed.output
    validated = CliRunner().invoke(app, ["validate", "smoke"])
    assert validated.exit_code == 0, validated.output
