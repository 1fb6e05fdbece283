"""`robench train --adversarial pgd|trades`: examples inside the eps-ball and [0, 1], the
options reaching the trainer, the attack and the clean/robust curve in the checkpoint,
bit-identical reruns, and one-sentence errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import load_file
from torch import nn
from typer.testing import CliRunner

from robench._core.errors import ConfigError
from robench.cli import app
from robench.training.adversarial import (
    LOSSES,
    AdversarialTraining,
    pgd_examples,
    trades_examples,
)
from robench.training.train import TrainConfig, train


def _tiny_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 10))


def _images() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    images = torch.rand(16, 1, 28, 28, generator=generator)
    images[:4] = 0.0  # pixels at the box's edges: the ball must be cut at 0 and 1
    images[4:8] = 1.0
    return images, torch.randint(0, 10, (16,), generator=generator)


@pytest.mark.parametrize("method", ["pgd", "trades"])
def test_adversarial_examples_stay_in_the_eps_ball_and_in_0_1(method: str) -> None:
    model, (images, labels) = _tiny_model(), _images()
    attack = AdversarialTraining(method, eps=0.1, steps=3)
    generator = torch.Generator().manual_seed(0)
    if method == "pgd":
        adversarial = pgd_examples(model, images, labels, attack, generator)
    else:
        adversarial = trades_examples(model, images, attack, generator)
    assert (adversarial - images).abs().max() <= 0.1 + 1e-6
    assert adversarial.min() >= 0 and adversarial.max() <= 1
    assert (adversarial - images).abs().max() > 0.05  # the steps moved the images
    assert not adversarial.requires_grad


def test_pgd_examples_raise_the_loss_and_leave_the_parameters_gradient_free() -> None:
    model, (images, labels) = _tiny_model(), _images()
    attack = AdversarialTraining("pgd", eps=0.1, steps=5)
    adversarial = pgd_examples(model, images, labels, attack, torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert F.cross_entropy(model(adversarial), labels) > F.cross_entropy(model(images), labels)
    assert all(p.grad is None for p in model.parameters())
    assert model.training  # the attack's eval mode is undone


def test_default_step_size_is_madrys_and_trades_adds_beta_times_kl() -> None:
    assert AdversarialTraining("pgd", eps=0.1, steps=5).alpha == pytest.approx(0.05)
    assert AdversarialTraining("pgd", eps=0.1, steps=5, step_size=0.01).alpha == 0.01
    model, (images, labels) = _tiny_model(), _images()
    generators = [torch.Generator().manual_seed(0) for _ in range(2)]
    losses = [
        LOSSES["trades"](trades, model, model, images, labels, 0.0, generator)
        for trades, generator in zip(
            [AdversarialTraining("trades", eps=0.1, steps=2, beta=beta) for beta in (1.0, 3.0)],
            generators,
            strict=True,
        )
    ]
    with torch.no_grad():
        natural = F.cross_entropy(model(images), labels)
    # The same examples (same seed): loss = natural + beta * KL, so KL follows from two betas.
    kl = (losses[1] - losses[0]).detach() / 2
    assert kl > 0
    assert float(losses[0]) == pytest.approx(float(natural + kl), rel=1e-5)


@pytest.mark.parametrize(
    ("settings", "flag"),
    [
        ({"adversarial": "pgd", "eps": 0.0}, "--eps"),
        ({"adversarial": "pgd", "eps": float("nan")}, "--eps"),
        ({"adversarial": "pgd", "eps": 0.1, "attack_steps": 0}, "--steps"),
        ({"adversarial": "pgd", "eps": 0.1, "step_size": -0.01}, "--step-size"),
        ({"adversarial": "trades", "eps": 0.1, "beta": 0.0}, "--beta"),
        ({"adversarial": "pgd", "eps": 0.1, "beta": 6.0}, "--beta"),
        ({"adversarial": "pgd"}, "--eps"),
        ({"adversarial": "fgsm", "eps": 0.1}, "--adversarial fgsm"),
        ({"eps": 0.1}, "--eps"),
        ({"attack_steps": 3}, "--steps"),
    ],
)
def test_bad_adversarial_settings_are_one_sentence(
    settings: dict[str, Any], flag: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=flag) as raised:
        train(TrainConfig(model="vit_nano_patch4_28", out_dir=tmp_path, **settings))
    message = str(raised.value)
    assert message.endswith(".") and "\n" not in message  # one sentence
    assert not (tmp_path / "best.safetensors").exists()


def test_cli_refuses_bad_attack_options_with_exit_2(tmp_path: Path) -> None:
    cases = [
        (["vit_nano_patch4_28", "--adversarial", "pgd", "--eps", "0"], "--eps"),
        (["vit_nano_patch4_28", "--adversarial", "pgd", "--eps", "0.1", "--steps", "0"], "--steps"),
        (["vit_nano_patch4_28", "--eps", "0.1"], "--adversarial"),
        (["text_classifier_nano", "--adversarial", "pgd", "--eps", "0.1"], "not an image model"),
    ]
    for args, expected in cases:
        result = CliRunner().invoke(app, ["train", *args, "-o", str(tmp_path)])
        assert result.exit_code == 2, result.output
        assert expected in " ".join(result.output.split())
        assert "Traceback" not in result.output


def test_cli_options_reach_the_trainer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import robench.training.train as train_module

    seen: list[TrainConfig] = []

    def fake_train(config: TrainConfig, progress: Any = None) -> Any:
        seen.append(config)
        config.attack()  # the trainer's own check of what it was given
        raise ConfigError("stop here.")

    monkeypatch.setattr(train_module, "train", fake_train)
    args = ["train", "vit_nano_patch4_28", "--adversarial", "trades", "--eps", "0.05",
            "--steps", "4", "--step-size", "0.02", "--beta", "3", "-o", str(tmp_path)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "stop here" in result.output
    attack = seen[0].attack()
    assert attack == AdversarialTraining("trades", eps=0.05, steps=4, step_size=0.02, beta=3.0)


def _settings(tmp_path: Path, name: str, **extra: Any) -> TrainConfig:
    return TrainConfig(
        model="vit_nano_patch4_28",
        out_dir=tmp_path / name,
        max_steps=4,
        train_limit=128,
        batch_size=32,
        val_limit=32,
        val_every=2,
        warmup_steps=1,
        command="pytest",
        adversarial="pgd",
        eps=0.1,
        attack_steps=2,
        **extra,
    )


def test_adversarial_training_records_the_attack_and_the_curve_and_reruns_bit_for_bit(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    first = train(_settings(tmp_path, "a"))
    again = train(_settings(tmp_path, "b"))
    assert first.metric == "val_robust_top1"
    assert [sorted(h) for h in first.history] == [
        ["loss", "step", "val_robust_top1", "val_top1"]
    ] * 2
    assert all(h["val_robust_top1"] <= h["val_top1"] for h in first.history)
    assert first.history == again.history
    for name in ("best", "last"):
        a = load_file(str(tmp_path / "a" / f"{name}.safetensors"))
        b = load_file(str(tmp_path / "b" / f"{name}.safetensors"))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    with safe_open(str(first.last_path), framework="pt") as fh:
        meta = json.loads(fh.metadata()["robench.training.train"])
    assert meta["adversarial"] | {"validation": ""} == {
        "method": "pgd", "norm": "Linf", "eps": 0.1, "steps": 2, "step_size": 0.125,
        "random_start": "uniform in the eps-ball", "validation": "",
    }  # fmt: skip
    assert meta["validation_curve"] == first.history
    assert meta["config"]["adversarial"] == "pgd" and meta["config"]["eps"] == 0.1
    # Another seed, other random starts: the weights differ.
    other = train(_settings(tmp_path, "c", seed=1))
    assert other.history != first.history


def test_trades_training_records_beta(tmp_path: Path, fashion_mnist_dir: Path) -> None:
    settings = _settings(tmp_path, "t", beta=2.0)
    settings.adversarial = "trades"
    result = train(settings)
    with safe_open(str(result.best_path), framework="pt") as fh:
        meta = json.loads(fh.metadata()["robench.training.train"])
    assert meta["adversarial"]["method"] == "trades" and meta["adversarial"]["beta"] == 2.0
    assert len(meta["validation_curve"]) >= 1


SHIPPED = {"vit_nano_pgd_fmnist": "vit_nano_fmnist",
           "vit_nano_elliptical_pgd_fmnist": "vit_nano_elliptical_fmnist"}  # fmt: skip


@pytest.mark.parametrize(("card", "twin"), SHIPPED.items())
def test_shipped_pgd_models_are_small_record_their_attack_and_resist_pgd_at_0_1(
    card: str, twin: str, fmnist_test: tuple[torch.Tensor, torch.Tensor]
) -> None:
    """The shipped PGD-AT cards load by name (sha256 checked), record eps 0.1 PGD-AT, and keep
    far more images under PGD at 0.1 than their standard-trained twins."""
    from robench.models.loading import load_model
    from robench.models.spec import bundled_cards, read_card

    path = bundled_cards()[card]
    assert path.with_suffix(".safetensors").stat().st_size < 1_000_000
    assert read_card(path).recipe["adversarial"] == "pgd"
    with safe_open(str(path.with_suffix(".safetensors")), framework="pt") as fh:
        meta = json.loads(fh.metadata()["robench.training.train"])
    assert meta["adversarial"]["eps"] == 0.1 and meta["config"]["model"] == twin
    images, labels = fmnist_test[0][:64], fmnist_test[1][:64]
    attack = AdversarialTraining("pgd", eps=0.1, steps=10)
    robust = {}
    for name in (card, twin):
        model = load_model(name).model.eval()
        adversarial = pgd_examples(model, images, labels, attack, torch.Generator().manual_seed(0))
        with torch.no_grad():
            robust[name] = float((model(adversarial).argmax(-1) == labels).float().mean())
    assert robust[card] >= 0.3 and robust[card] >= robust[twin] + 0.2
