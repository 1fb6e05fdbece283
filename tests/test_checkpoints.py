"""Checkpoint reading (safe by default), layouts, strict loading errors, safetensors writes."""

from __future__ import annotations

import argparse
import hashlib
import logging
import pathlib
from collections.abc import Callable
from pathlib import Path

import pytest
import timm
import torch
from safetensors.torch import save_file
from torch import nn

from robench._core.errors import CheckpointError
from robench.models.checkpoints import (
    load_state_dict_into,
    read_checkpoint,
    save_safetensors,
    sha256_file,
)


def _small_model(num_classes: int = 10) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 8 * 8, num_classes),
    )


def _state() -> dict[str, torch.Tensor]:
    return _small_model().state_dict()


def _equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


class _Evil:
    """Unpickling this creates `marker`: stands in for arbitrary code in a pickle."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


LAYOUTS: dict[str, tuple[str, Callable[[dict], object], str]] = {
    "model": (".pth", lambda sd: {"model": sd, "epoch": 3}, "model"),
    "state_dict": (".pth", lambda sd: {"state_dict": sd, "arch": "x"}, "state_dict"),
    "flat": (".pt", lambda sd: sd, "flat"),
    "ddp": (".bin", lambda sd: {f"module.{k}": v for k, v in sd.items()}, "flat"),
    "compile": (
        ".ckpt",
        lambda sd: {"model": {f"_orig_mod.{k}": v for k, v in sd.items()}},
        "model",
    ),
    "pth.tar": (".pth.tar", lambda sd: {"state_dict": sd, "state_dict_ema": sd}, "state_dict"),
    "deit-args": (
        ".pth",
        lambda sd: {"model": sd, "args": argparse.Namespace(model="deit_tiny", lr=5e-4)},
        "model",
    ),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_torch_layouts_load(tmp_path: Path, name: str) -> None:
    suffix, wrap, layout = LAYOUTS[name]
    path = tmp_path / f"ckpt{suffix}"
    torch.save(wrap(_state()), path)
    ckpt = read_checkpoint(path)
    assert ckpt.layout == layout and ckpt.metadata == {}
    assert _equal(ckpt.state_dict, _state())
    model = _small_model(10)
    load_state_dict_into(model, ckpt.state_dict, model_name="small")


def test_safetensors_layout_and_metadata(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_file(_state(), str(path), metadata={"robench_model": "small"})
    ckpt = read_checkpoint(path)
    assert ckpt.layout == "safetensors" and ckpt.metadata == {"robench_model": "small"}
    assert _equal(ckpt.state_dict, _state())
    assert ckpt.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_ema_weights(tmp_path: Path) -> None:
    plain, ema = _state(), {k: v + 1 for k, v in _state().items()}
    path = tmp_path / "timm.pth.tar"
    torch.save({"state_dict": plain, "state_dict_ema": ema}, path)
    assert _equal(read_checkpoint(path, ema=True).state_dict, ema)
    assert read_checkpoint(path, ema=True).layout == "state_dict_ema"
    assert _equal(read_checkpoint(path).state_dict, plain)

    deit = tmp_path / "deit.pth"
    torch.save({"model": plain, "model_ema": ema}, deit)
    assert read_checkpoint(deit, ema=True).layout == "model_ema"

    no_ema = tmp_path / "plain.pth"
    torch.save({"model": plain}, no_ema)
    with pytest.raises(CheckpointError, match="drop --ema"):
        read_checkpoint(no_ema, ema=True)

    only_ema = tmp_path / "only_ema.pth"
    torch.save({"state_dict_ema": ema}, only_ema)
    with pytest.raises(CheckpointError, match="pass --ema"):
        read_checkpoint(only_ema)


def test_sha256_file_matches_hashlib(tmp_path: Path) -> None:
    path = tmp_path / "blob.bin"
    path.write_bytes(bytes(range(256)) * 10_000)
    assert sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_malicious_pickle_is_refused_unless_trusted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pth"
    torch.save({"model": _state(), "payload": _Evil(marker)}, path)
    assert not marker.exists()
    with pytest.raises(CheckpointError, match="--trust-checkpoint") as info:
        read_checkpoint(path)
    assert "refuses" in str(info.value)
    assert not marker.exists()

    with caplog.at_level(logging.WARNING, logger="robench.models.checkpoints"):
        ckpt = read_checkpoint(path, trust=True)
    assert marker.exists()  # trusting a file means running its code: that is the point
    assert ckpt.layout == "model" and _equal(ckpt.state_dict, _state())
    assert "trust-checkpoint" in caplog.text


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="does not exist"):
        read_checkpoint(tmp_path / "missing.pth")
    with pytest.raises(CheckpointError, match="is a directory"):
        read_checkpoint(tmp_path)
    odd = tmp_path / "weights.h5"
    odd.write_bytes(b"x")
    with pytest.raises(CheckpointError, match=r"\.safetensors, \.pth\.tar, \.pth"):
        read_checkpoint(odd)
    garbage = tmp_path / "garbage.pth"
    garbage.write_bytes(b"\x00not a checkpoint" * 10)
    with pytest.raises(CheckpointError, match=r"garbage\.pth"):
        read_checkpoint(garbage)
    bad_st = tmp_path / "bad.safetensors"
    bad_st.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}")
    with pytest.raises(CheckpointError, match="safetensors"):
        read_checkpoint(bad_st)
    not_dict = tmp_path / "list.pt"
    torch.save([torch.ones(1)], not_dict)
    with pytest.raises(CheckpointError, match="holds a list"):
        read_checkpoint(not_dict)


def test_head_mismatch_hints_num_classes_timm() -> None:
    trained = timm.create_model("resnet10t", num_classes=10, pretrained=False)
    model = timm.create_model("resnet10t", num_classes=5, pretrained=False)
    with pytest.raises(CheckpointError) as info:
        load_state_dict_into(model, trained.state_dict(), model_name="resnet10t")
    message = str(info.value)
    assert "the checkpoint has 10 classes, the model 5; pass --num-classes 10" in message
    assert "fc.weight: checkpoint [10, 512] vs model [5, 512]" in message


def test_head_mismatch_hints_num_classes_plain_module() -> None:
    with pytest.raises(CheckpointError, match="pass --num-classes 10"):
        load_state_dict_into(_small_model(5), _state(), model_name="small")


def test_wrong_model_and_prefix_hints() -> None:
    resnet = timm.create_model("resnet10t", num_classes=10, pretrained=False)
    with pytest.raises(CheckpointError, match=r"wrong model name\?") as info:
        load_state_dict_into(resnet, _state(), model_name="resnet10t")
    assert "missing keys" in str(info.value) and "(and " in str(info.value)
    assert str(info.value).count("\n") == 0

    prefixed = {f"model.{k}": v for k, v in _state().items()}
    with pytest.raises(CheckpointError, match=r"extra prefix 'model\.'"):
        load_state_dict_into(_small_model(), prefixed, model_name="small")


def test_load_copies_values() -> None:
    source = _small_model()
    with torch.no_grad():
        for p in source.parameters():
            p.add_(1.0)
    target = _small_model()
    load_state_dict_into(target, source.state_dict(), model_name="small")
    assert _equal(target.state_dict(), source.state_dict())


def test_save_safetensors_round_trip(tmp_path: Path) -> None:
    shared = torch.randn(4, 3)
    state = {
        "embed.weight": shared,
        "head.weight": shared,  # tied weights: safetensors refuses shared storage
        "transposed": torch.randn(3, 5).t(),  # not contiguous
    }
    path = tmp_path / "out" / "model.safetensors"
    digest = save_safetensors(state, path, {"model": "tiny", "classes": "10"})
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert sorted(p.name for p in path.parent.iterdir()) == ["model.safetensors"]
    ckpt = read_checkpoint(path)
    assert ckpt.metadata == {"model": "tiny", "classes": "10"} and ckpt.sha256 == digest
    assert _equal(ckpt.state_dict, {k: v.contiguous() for k, v in state.items()})
    # Overwriting goes through the same atomic replace.
    assert save_safetensors({"x": torch.zeros(2)}, path, {}) == sha256_file(path)
    with pytest.raises(TypeError, match="must be str"):
        save_safetensors(state, path, {"epochs": 3})  # type: ignore[dict-item]
