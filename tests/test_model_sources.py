"""Model sources (docs/models.md): timm folders and the Hub cache, transformers image
classifiers, their preprocessing, labels, bad input and provenance.

The judge throughout: robench's clean per-sample predictions equal a plain forward pass of
the same model on the same real images (Fashion-MNIST written as PNG class folders), with
the preprocessing the model's own library applies (timm's eval transform, the image
processor). Every model is built here by timm or transformers; nothing is downloaded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

from robench._core.errors import ConfigError
from robench.cli import app
from robench.data.idx import read_idx
from robench.models.loading import load_model
from robench.models.names import unknown_model_message
from robench.models.sources.hf_tasks import (
    IMAGE_CLASSIFICATION,
    LANGUAGE_MODELING,
    transformers_task,
)
from robench.results.report.schema import read_report

transformers = pytest.importorskip("transformers", reason="the optional extra robench[hf]")

# Fashion-MNIST's classes, as the dataset names them.
FMNIST_CLASSES = [
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
]  # fmt: skip
COMMIT = "0123456789abcdef0123456789abcdef01234567"
CLEAN_SUITE = (
    'name = "clean-only"\nversion = 1\ndescription = "clean"\n\n[[perturbations]]\nkind = "clean"\n'
)


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory: pytest.TempPathFactory, fashion_mnist_dir: Path) -> Path:
    """48 Fashion-MNIST test images as RGB PNGs of varied sizes in class folders named after
    the classes (so resizing and cropping are exercised, not skipped)."""
    root = tmp_path_factory.mktemp("fmnist_png")
    images = read_idx(fashion_mnist_dir / "t10k-images-idx3-ubyte.gz")[:48]
    labels = read_idx(fashion_mnist_dir / "t10k-labels-idx1-ubyte.gz")[:48]
    for i, (pixels, label) in enumerate(zip(images, labels, strict=True)):
        folder = root / FMNIST_CLASSES[int(label)].replace("/", "_")
        folder.mkdir(exist_ok=True)
        size = (28 + 7 * (i % 5), 28 + 5 * (i % 3))
        Image.fromarray(pixels).convert("RGB").resize(size).save(folder / f"{i:03d}.png")
    return root


def _images(root: Path, model: str) -> list[tuple[Path, str]]:
    """(file, class folder) of every image in the order robench evaluates them for `model`
    (class index order, which a class map may change)."""
    from robench.tasks import load_task

    dataset = load_task("image-classification").open_data(
        str(root), load_model(model), split="test", layout=None, class_map=None, options={}
    )
    return [(root / rel, rel.split("/")[0]) for rel in dataset.relative_paths()]


def _save_vit(folder: Path, labels: list[str], processor_kwargs: dict) -> torch.nn.Module:
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    torch.manual_seed(0)
    config = ViTConfig(
        image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, num_labels=len(labels),
        id2label=dict(enumerate(labels)), label2id={n: i for i, n in enumerate(labels)},
    )  # fmt: skip
    model = ViTForImageClassification(config).eval()
    model.save_pretrained(folder)
    ViTImageProcessor(**processor_kwargs).save_pretrained(folder)
    return model


def _eval(model: str, data: Path, out: Path, *extra: str):
    suite = out.parent / "clean.toml"
    suite.write_text(CLEAN_SUITE)
    args = ["eval", model, "--suite", str(suite), "--data", str(data), "--out", str(out)]
    return CliRunner().invoke(app, [*args, *extra])


def _predictions(report_path: Path) -> list[int]:
    return read_report(report_path).samples["default"].values["clean"]["prediction"]


# --- transformers image classifiers (hf:) -------------------------------------------------


@pytest.fixture(scope="module")
def vit_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
    """A ViT whose labels are Fashion-MNIST's in reversed order: only a by-name class map
    makes its predictions line up with the folders."""
    folder = tmp_path_factory.mktemp("vit")
    kwargs = {"size": {"height": 36, "width": 36}, "do_center_crop": True,
              "crop_size": {"height": 32, "width": 32}}  # fmt: skip
    return folder, _save_vit(folder, FMNIST_CLASSES[::-1], kwargs)


def test_hf_image_classifier_predictions_equal_a_plain_forward_pass(
    vit_folder: tuple[Path, torch.nn.Module], image_folder: Path, tmp_path: Path
) -> None:
    from transformers import AutoImageProcessor

    folder, model = vit_folder
    result = _eval(f"hf:{folder}", image_folder, tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    processor = AutoImageProcessor.from_pretrained(folder)
    files = _images(image_folder, f"hf:{folder}")
    pixels = processor([Image.open(p).convert("RGB") for p, _ in files], return_tensors="pt")
    with torch.no_grad():
        plain = model(**pixels).logits.argmax(-1).tolist()
    # Report indices follow the model's outputs (class map by id2label); the samples follow
    # the dataset's order, which is the folders' sorted order, as `files`.
    assert _predictions(tmp_path / "r.json") == plain
    report = read_report(tmp_path / "r.json")
    targets = report.samples["default"].targets
    expected = [FMNIST_CLASSES[::-1].index(name.replace("_", "/")) for _, name in files]
    assert targets == expected  # the folders were mapped to the model's label indices
    assert report.model.source is not None and report.model.source["source"] == "hf"
    assert report.model.preprocessing["resize_mode"] == "squash"


def test_hf_model_from_the_cache_records_commit_and_weight_hashes(
    vit_folder: tuple[Path, torch.nn.Module],
    image_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    connect = socket.socket.connect

    def no_network(self: socket.socket, address: object) -> None:
        # Only internet sockets are the network: DataLoader workers (`--workers auto` reads
        # image folders in worker processes) hand tensors back over a local Unix socket.
        if self.family in (socket.AF_INET, socket.AF_INET6):
            raise AssertionError("robench tried to open a network connection")
        connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", no_network)  # weights from the cache only
    folder, _ = vit_folder
    snapshot = _fake_cache(tmp_path / "hf_home", "acme/tiny-vit", folder, monkeypatch)
    result = _eval("hf:acme/tiny-vit", image_folder, tmp_path / "cached.json", "--limit", "8")
    assert result.exit_code == 0, result.output
    source = read_report(tmp_path / "cached.json").model.source
    assert source is not None
    assert (source["location"], source["commit"], source["revision"]) == (
        "acme/tiny-vit", COMMIT, "main",
    )  # fmt: skip
    import hashlib

    weights = (snapshot / "model.safetensors").read_bytes()
    assert source["weights_sha256"] == {"model.safetensors": hashlib.sha256(weights).hexdigest()}
    report = read_report(tmp_path / "cached.json")
    assert report.model.checkpoint_sha256 == hashlib.sha256(weights).hexdigest()
    assert set(source["files_sha256"]) == {"config.json", "preprocessor_config.json"}


def _fake_cache(home: Path, repo: str, source: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """huggingface_hub's cache layout under HF_HOME, holding `source`'s files at COMMIT."""
    repo_dir = home / "hub" / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / COMMIT
    shutil.copytree(source, snapshot)
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(COMMIT)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    return snapshot


def test_an_imagenet_1k_model_scores_imagenet_r_among_its_200_classes(
    tmp_path: Path,
) -> None:
    """`--classes imagenet-r` works unchanged: logits cut to the listed classes, argmax."""
    from transformers import AutoImageProcessor

    from robench.data.label_space import read_label_space

    model_dir = tmp_path / "vit1k"
    labels = [f"class {i}" for i in range(1000)]
    model = _save_vit(model_dir, labels, {"size": {"height": 32, "width": 32}})
    space = read_label_space("imagenet-r")
    data = tmp_path / "imagenet-r"
    rng = np.random.default_rng(0)
    for wnid in space.wnids:
        (data / wnid).mkdir(parents=True)
        pixels = rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(data / wnid / "0.png")
    result = _eval(f"hf:{model_dir}", data, tmp_path / "r.json", "--classes", "imagenet-r")
    assert result.exit_code == 0, result.output
    files = _images(data, f"hf:{model_dir}")  # the 200 wnid folders in order, one image each
    processor = AutoImageProcessor.from_pretrained(model_dir)
    with torch.no_grad():
        logits = model(**processor([Image.open(p) for p, _ in files], return_tensors="pt")).logits
    plain = logits[:, list(space.output_classes)].argmax(-1).tolist()
    assert _predictions(tmp_path / "r.json") == plain
    assert read_report(tmp_path / "r.json").samples["default"].targets == list(range(200))


class PickledObject:
    """Not a tensor: unpickling it would import and build a class (code runs)."""


def test_pickled_weights_load_weights_only_and_other_objects_are_refused(
    vit_folder: tuple[Path, torch.nn.Module], tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    from robench._core.errors import CheckpointError

    folder, model = vit_folder
    for name in ("config.json", "preprocessor_config.json"):
        shutil.copy(folder / name, tmp_path / name)
    weights = load_file(folder / "model.safetensors")
    torch.save(weights, tmp_path / "pytorch_model.bin")
    loaded = load_model(f"hf:{tmp_path}")
    assert loaded.origin is not None and list(loaded.origin.weights) == ["pytorch_model.bin"]
    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(x), model(pixel_values=(x - 0.5) / 0.5).logits)
    torch.save({**weights, "extra": PickledObject()}, tmp_path / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match=r"refuses them; convert them to model\.safetensors"):
        load_model(f"hf:{tmp_path}")


def test_processor_without_rescaling_is_folded_into_mean_and_std(tmp_path: Path) -> None:
    from transformers import AutoImageProcessor

    kwargs = {"size": {"height": 32, "width": 32}, "do_rescale": False,
              "image_mean": [120.0, 110.0, 100.0], "image_std": [60.0, 50.0, 40.0]}  # fmt: skip
    model = _save_vit(tmp_path, ["a", "b", "c"], kwargs)
    loaded = load_model(f"hf:{tmp_path}")
    assert loaded.spec.mean == pytest.approx((120 / 255, 110 / 255, 100 / 255))
    images = [Image.fromarray(np.full((40, 30, 3), 17 * i, np.uint8)) for i in range(1, 6)]
    processor = AutoImageProcessor.from_pretrained(tmp_path)
    with torch.no_grad():
        plain = model(**processor(images, return_tensors="pt")).logits
        ours = loaded.model(torch.stack([loaded.preprocessing(im) for im in images]))
    torch.testing.assert_close(ours, plain, atol=1e-5, rtol=1e-5)


def test_a_convnext_processor_resizes_the_shorter_side_then_crops(tmp_path: Path) -> None:
    """ConvNeXt's processor: shorter side to shortest_edge / crop_pct, then a center crop."""
    from transformers import (
        AutoImageProcessor,
        ConvNextConfig,
        ConvNextForImageClassification,
        ConvNextImageProcessor,
    )

    torch.manual_seed(0)
    config = ConvNextConfig(hidden_sizes=[8, 16, 16, 16], depths=[1, 1, 1, 1], num_labels=4)
    model = ConvNextForImageClassification(config).eval()
    model.save_pretrained(tmp_path)
    ConvNextImageProcessor(size={"shortest_edge": 32}, crop_pct=0.875).save_pretrained(tmp_path)
    loaded = load_model(f"hf:{tmp_path}")
    assert loaded.preprocessing is not None
    assert (loaded.preprocessing.resize_mode, loaded.preprocessing.input_size) == (
        "shorter",
        (3, 32, 32),
    )
    rng = np.random.default_rng(0)
    shapes = [(40, 60), (75, 41), (36, 36), (90, 50)]
    images = [Image.fromarray(rng.integers(0, 256, (*hw, 3), dtype=np.uint8)) for hw in shapes]
    processor = AutoImageProcessor.from_pretrained(tmp_path)
    with torch.no_grad():
        plain = model(**processor(images, return_tensors="pt")).logits
        ours = loaded.model(torch.stack([loaded.preprocessing(im) for im in images]))
    torch.testing.assert_close(ours, plain, atol=1e-5, rtol=1e-5)


# --- timm folders and the Hub cache (local-dir:, hf-hub:) ----------------------------------


@pytest.fixture(scope="module")
def timm_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
    import timm
    from timm.models import save_for_hf

    torch.manual_seed(0)
    model = timm.create_model("test_resnet", num_classes=10, pretrained=False).eval()
    model.pretrained_cfg = {**model.pretrained_cfg, "input_size": (3, 32, 32), "crop_pct": 0.875}
    folder = tmp_path_factory.mktemp("timm_resnet")
    save_for_hf(model, folder, safe_serialization=True)
    return folder, model


def _timm_plain_predictions(model: torch.nn.Module, files: list[tuple[Path, str]]) -> list[int]:
    import timm.data

    config = timm.data.resolve_data_config(model=model)
    transform = timm.data.create_transform(**config)
    batch = torch.stack([transform(Image.open(p).convert("RGB")) for p, _ in files])
    with torch.no_grad():
        return model(batch).argmax(-1).tolist()


def test_local_dir_timm_model_predictions_equal_timm_forward_pass(
    timm_folder: tuple[Path, torch.nn.Module], image_folder: Path, tmp_path: Path
) -> None:
    folder, model = timm_folder
    result = _eval(f"local-dir:{folder}", image_folder, tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    assert _predictions(tmp_path / "r.json") == _timm_plain_predictions(
        model, _images(image_folder, f"local-dir:{folder}")
    )
    source = read_report(tmp_path / "r.json").model.source
    assert source is not None and source["source"] == "local-dir"
    assert list(source["weights_sha256"]) == ["model.safetensors"]


def test_hf_hub_timm_model_loads_offline_from_the_cache_at_a_revision(
    timm_folder: tuple[Path, torch.nn.Module],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder, model = timm_folder
    _fake_cache(tmp_path / "hf_home", "acme/test-resnet", folder, monkeypatch)
    for name in ("hf-hub:acme/test-resnet", f"hf-hub:acme/test-resnet@{COMMIT}"):
        loaded = load_model(name)
        assert loaded.origin is not None and loaded.origin.commit == COMMIT
        x = torch.rand(2, 3, 32, 32)
        with torch.no_grad():
            mean = torch.tensor(loaded.spec.mean).view(1, 3, 1, 1)
            std = torch.tensor(loaded.spec.std).view(1, 3, 1, 1)
            torch.testing.assert_close(loaded.model(x), model((x - mean) / std))


def test_a_timm_pretrained_tag_loads_its_hub_weights_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import timm
    from safetensors.torch import save_file

    torch.manual_seed(1)
    model = timm.create_model("test_resnet", pretrained=False).eval()  # 1000 ImageNet classes
    weights = tmp_path / "weights"
    weights.mkdir()
    save_file(model.state_dict(), weights / "model.safetensors")
    _fake_cache(tmp_path / "hf_home", "timm/test_resnet.r160_in1k", weights, monkeypatch)
    loaded = load_model("test_resnet.r160_in1k")
    assert loaded.origin is not None
    assert (loaded.origin.source, loaded.origin.commit) == ("timm", COMMIT)
    assert loaded.preprocessing is not None and loaded.preprocessing.input_size == (3, 160, 160)
    assert loaded.sources["mean"] == "timm pretrained_cfg"
    x = torch.rand(2, 3, 160, 160)
    mean = torch.tensor(loaded.spec.mean).view(1, 3, 1, 1)
    std = torch.tensor(loaded.spec.std).view(1, 3, 1, 1)
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(x), model((x - mean) / std))


# --- bad input: one sentence, exit 2, nothing written ---------------------------------------


def _write_config(folder: Path, config: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(
    ("make_model", "expected"),
    [
        (lambda tmp: f"hf:{_write_config(tmp / 'm', {'hello': 1})}", "no model_type"),
        (lambda tmp: f"hf:{(tmp / 'empty').mkdir() or tmp / 'empty'}", "not a model folder"),
        (
            lambda tmp: f"hf:{_write_config(tmp / 'm', {'architecture': 'resnet18'})}",
            "load it with local-dir:",
        ),
        (
            lambda tmp: f"local-dir:{_write_config(tmp / 'm', {'model_type': 'vit'})}",
            "load it with hf:",
        ),
        (
            lambda tmp: f"hf:{_write_config(tmp / 'm', {'model_type': 'no-such-arch'})}",
            "does not know",
        ),
        (
            lambda tmp: (
                "hf:"
                + str(
                    _write_config(tmp / "m", {"model_type": "x", "auto_map": {"AutoModel": "m.M"}})
                )
            ),
            "--trust-remote-code",
        ),
        (lambda tmp: "hf:acme/absent-model", "hf download acme/absent-model"),
        (lambda tmp: "hf-hub:acme/absent-model", "not in the local Hugging Face cache"),
        (lambda tmp: f"local-dir:{tmp / 'nowhere'}", "does not exist"),
        (lambda tmp: "resnet50.no_such_tag", "no pretrained tag"),
    ],
)
def test_bad_models_are_one_sentence_exit_2_and_nothing_written(
    make_model, expected: str, image_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty_cache"))
    out = tmp_path / "out" / "r.json"
    out.parent.mkdir()
    result = _eval(make_model(tmp_path), image_folder, out)
    assert result.exit_code == 2, result.output
    assert expected in result.output and "Traceback" not in result.output
    assert list(out.parent.iterdir()) == [out.parent / "clean.toml"]


def test_models_and_suites_of_different_tasks_are_refused(
    vit_folder: tuple[Path, torch.nn.Module],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    image_folder: Path,
) -> None:
    """An image classifier with a text suite, and a causal LM with an image suite."""
    folder, _ = vit_folder
    out = tmp_path / "r.json"
    args = ["eval", f"hf:{folder}", "-s", "text-smoke", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "language-modeling" in result.output, result.output
    lm_folder = _fake_causal_lm(tmp_path / "lm", monkeypatch, calls=[])
    result = _eval(f"hf:{lm_folder}", image_folder, out)
    assert result.exit_code == 2 and "image-classification" in result.output, result.output
    assert not out.exists()


def test_an_absent_repo_names_the_cache_and_the_download_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "cache"))
    with pytest.raises(ConfigError) as caught:
        load_model("hf:acme/absent@v1")
    message = str(caught.value)
    assert str(tmp_path / "cache" / "hub") in message and "HF_HOME" in message
    assert "hf download acme/absent --revision v1" in message and message.count(". ") == 0


def test_an_unknown_model_name_gives_close_matches_and_the_listing_command() -> None:
    message = unknown_model_message("resnet5O")
    assert "Did you mean 'resnet50'" in message and "robench list models" in message
    assert "aimv2" not in message  # no dump of unrelated names
    assert len(message) < 400


# --- which task a transformers config means ------------------------------------------------


@pytest.mark.parametrize(
    ("config", "task"),
    [
        ({"model_type": "vit", "architectures": ["ViTForImageClassification"]},
         IMAGE_CLASSIFICATION),
        ({"model_type": "convnext", "architectures": ["ConvNextForImageClassification"]},
         IMAGE_CLASSIFICATION),
        ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}, LANGUAGE_MODELING),
        ({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}, LANGUAGE_MODELING),
        ({"model_type": "x", "auto_map": {"AutoModelForCausalLM": "m.M"}}, LANGUAGE_MODELING),
    ],
)  # fmt: skip
def test_the_task_comes_from_the_config(config: dict, task: str) -> None:
    assert transformers_task(config, "config.json", trust_remote_code=True) == task


def test_a_model_robench_cannot_evaluate_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"image classifiers .* causal language models"):
        transformers_task(
            {"model_type": "bert", "architectures": ["BertModel"]}, "c", trust_remote_code=False
        )


def test_a_causal_lm_goes_to_the_language_model_builder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hf: source hands a causal LM to `hf_causal_lm.build_causal_lm` (another module)."""
    calls: list = []
    _fake_causal_lm(tmp_path, monkeypatch, calls)
    loaded = load_model(f"hf:{tmp_path}")
    assert calls == [(tmp_path, False)]
    assert (loaded.task, loaded.tokenizer, loaded.max_length) == ("language-modeling", "tok", 7)
    assert loaded.origin is not None and loaded.origin.report_section()["tokenizer_sha256"] == "ab"


def _fake_causal_lm(folder: Path, monkeypatch: pytest.MonkeyPatch, calls: list) -> Path:
    """A GPT-2 folder saved by transformers, and a stand-in for `hf_causal_lm` (built on
    another branch) that records its calls."""
    import sys
    import types

    from transformers import GPT2Config, GPT2LMHeadModel

    GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=16)).save_pretrained(
        folder
    )

    def build_causal_lm(folder: Path, *, trust_remote_code: bool):
        calls.append((folder, trust_remote_code))
        return types.SimpleNamespace(
            model=torch.nn.Linear(1, 1),
            tokenizer="tok",
            max_length=7,
            info={"tokenizer_sha256": "ab"},
        )

    module = types.ModuleType("robench.models.sources.hf_causal_lm")
    module.build_causal_lm = build_causal_lm  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "robench.models.sources.hf_causal_lm", module)
    return folder


@pytest.mark.parametrize(
    ("model", "extra", "expected"),
    [
        ("hf:no/such-vit", ["--ema"], "its hf source, not from a training checkpoint"),
        ("hf-hub:timm/no-such-model", ["--ema"], "its hf-hub source"),
        ("local-dir:no-such-dir", ["--ema"], "its local-dir source"),
        ("resnet18.a1_in1k", ["--ema"], "from timm's pretrained weights"),
        ("hf:no/such-vit", ["--num-classes", "5"], "takes its classes from its config.json"),
    ],
)
def test_options_a_sourced_model_would_ignore_are_refused(
    model: str, extra: list[str], expected: str, image_folder: Path, tmp_path: Path
) -> None:
    result = _eval(model, image_folder, tmp_path / "r.json", *extra)
    assert result.exit_code == 2, result.output
    assert expected in " ".join(result.output.split())
    assert "would be ignored; drop" in " ".join(result.output.split())
