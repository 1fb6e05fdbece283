"""Dense FGSM / PGD and the pixel losses: torchattacks parity on a classifier, attacks on a
tiny segmentation net (loss up, accuracy down, ball, seed, ignored and padded pixels, batch
companions) and SegPGD's weighting by hand."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from robench.data.segmentation.label_maps import (
    IGNORE_INDEX,
    PAD_INDEX,
    logits_at_labels,
    pad_label_maps,
)
from robench.perturbations.adversarial.dense_pgd import dense_fgsm, dense_pgd
from robench.perturbations.adversarial.pixel_loss import (
    per_sample_pixel_cross_entropy,
    pixel_cross_entropy,
    segpgd_weight,
)
from robench.perturbations.threat_models import NORMS

CLASSES = 5


@pytest.fixture(scope="module", autouse=True)
def _one_intra_op_thread() -> Iterator[None]:
    """Tiny models: one thread is as fast, and immune to oversubscribed cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _classifier() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 10),
    ).eval()


def _segmenter() -> nn.Module:
    """(B, 3, H, W) -> logits (B, CLASSES, H/2, W/2)."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, CLASSES, 3, stride=2, padding=1),
    ).eval()


def _batch_mean_ce(logits: torch.Tensor, labels: torch.Tensor, step: int, steps: int):
    return F.cross_entropy(logits, labels)  # torchattacks' loss: mean over the batch


@pytest.fixture(scope="module")
def seg_batch() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """A segmenter, 4 images 16x16 and, as labels, its own clean predictions at 16x16 with a
    strip of ignored pixels: every scored pixel starts correct."""
    model = _segmenter()
    gen = torch.Generator().manual_seed(1)
    images = torch.rand(4, 3, 16, 16, generator=gen)
    with torch.no_grad():
        logits = model(images)
        labels = torch.stack([x.argmax(0) for x in logits_at_labels(logits, images[:, 0].long())])
    labels[:, :2] = IGNORE_INDEX
    return model, images, labels


def _pixel_accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    with torch.no_grad():
        logits = logits_at_labels(model(images), labels)
    scored = labels != IGNORE_INDEX
    pred = torch.stack([x.argmax(0) for x in logits])
    return float((pred == labels)[scored].float().mean())


# --- torchattacks parity on a classifier -------------------------------------------------


@pytest.mark.parametrize(
    ("norm", "library", "eps", "alpha"),
    [("linf", "PGD", 8 / 255, 2 / 255), ("l2", "PGDL2", 0.5, 0.1)],
)
@pytest.mark.parametrize("random_start", [True, False])
def test_pgd_equals_torchattacks_with_a_classification_loss(
    norm: str, library: str, eps: float, alpha: float, random_start: bool
) -> None:
    import torchattacks

    model = _classifier()
    gen = torch.Generator().manual_seed(2)
    images = torch.rand(8, 3, 16, 16, generator=gen)
    labels = torch.randint(0, 10, (8,), generator=gen)
    ours = dense_pgd(
        model,
        images,
        labels,
        eps=eps,
        steps=5,
        step_size=alpha,
        random_start=random_start,
        norm=norm,
        loss=_batch_mean_ce,
        seed=3,
    )
    torch.manual_seed(3)
    attack = getattr(torchattacks, library)(
        model, eps=eps, alpha=alpha, steps=5, random_start=random_start
    )
    direct = attack(images, labels)
    assert not torch.equal(ours, images)
    torch.testing.assert_close(ours, direct, rtol=0, atol=1e-6)


def test_fgsm_equals_torchattacks_fgsm() -> None:
    import torchattacks

    model = _classifier()
    gen = torch.Generator().manual_seed(2)
    images = torch.rand(8, 3, 16, 16, generator=gen)
    labels = torch.randint(0, 10, (8,), generator=gen)
    ours = dense_fgsm(model, images, labels, eps=4 / 255, loss=_batch_mean_ce)
    direct = torchattacks.FGSM(model, eps=4 / 255)(images, labels)
    torch.testing.assert_close(ours, direct, rtol=0, atol=1e-6)


# --- segmentation ------------------------------------------------------------------------


@pytest.mark.parametrize(("norm", "eps"), [("linf", 8 / 255), ("l2", 1.0)])
@pytest.mark.parametrize("loss", ["ce", "segpgd"])
def test_pgd_raises_the_pixel_loss_and_stays_in_the_ball(
    seg_batch: tuple[nn.Module, torch.Tensor, torch.Tensor], norm: str, eps: float, loss: str
) -> None:
    model, images, labels = seg_batch
    adv = dense_pgd(model, images, labels, eps=eps, steps=10, norm=norm, loss=loss, seed=0)
    with torch.no_grad():
        clean_loss = pixel_cross_entropy(model(images), labels)
        adv_loss = pixel_cross_entropy(model(adv), labels)
    assert float(adv_loss) > float(clean_loss)
    assert _pixel_accuracy(model, images, labels) == 1.0
    assert _pixel_accuracy(model, adv, labels) < 0.9
    assert float(adv.min()) >= 0 and float(adv.max()) <= 1
    distance = NORMS[norm].distance((adv - images).double())
    assert bool((distance <= eps + 1e-6).all())
    again = dense_pgd(model, images, labels, eps=eps, steps=10, norm=norm, loss=loss, seed=0)
    assert torch.equal(adv, again)


def test_ignored_pixels_have_no_influence(
    seg_batch: tuple[nn.Module, torch.Tensor, torch.Tensor],
) -> None:
    """All pixels ignored: zero gradient, FGSM leaves the image as it was; a sample whose map
    is all ignored is untouched while its batch companion is attacked."""
    model, images, labels = seg_batch
    ignored = torch.full_like(labels, IGNORE_INDEX)
    assert torch.equal(dense_fgsm(model, images, ignored, eps=8 / 255), images)
    mixed = labels.clone()
    mixed[1] = IGNORE_INDEX
    adv = dense_fgsm(model, images, mixed, eps=8 / 255)
    assert torch.equal(adv[1], images[1])
    assert not torch.equal(adv[0], images[0])


@pytest.mark.parametrize(("norm", "eps"), [("linf", 8 / 255), ("l2", 1.0)])
@pytest.mark.parametrize("loss", ["ce", "segpgd"])
def test_without_random_start_a_sample_ignores_its_batch_companions(
    seg_batch: tuple[nn.Module, torch.Tensor, torch.Tensor], norm: str, eps: float, loss: str
) -> None:
    """Each sample's loss is its own mean, summed over samples: attacking a batch equals
    attacking each sample alone, also when a smaller label map is padded into the batch. With
    a random start this does not hold: one stream of noise is drawn for the whole batch (as in
    torchattacks), so a sample's start depends on its position."""
    model, images, labels = seg_batch
    maps = [labels[0], labels[1, :12, :12], labels[2, :8, :16], labels[3]]
    padded = pad_label_maps(maps)
    assert bool((padded == PAD_INDEX).any())
    kwargs = {"eps": eps, "steps": 3, "norm": norm, "loss": loss, "random_start": False}
    together = dense_pgd(model, images, padded, **kwargs)
    for i, label_map in enumerate(maps):
        alone = dense_pgd(model, images[i : i + 1], label_map[None], **kwargs)
        torch.testing.assert_close(together[i : i + 1], alone, rtol=0, atol=1e-6)


def test_caller_rng_and_model_are_left_alone(
    seg_batch: tuple[nn.Module, torch.Tensor, torch.Tensor],
) -> None:
    model, images, labels = seg_batch
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    dense_pgd(model, images, labels, eps=8 / 255, steps=2)
    assert torch.equal(torch.rand(3), expected)
    assert all(p.requires_grad for p in model.parameters())
    assert all(p.grad is None for p in model.parameters())


# --- the losses by hand ------------------------------------------------------------------


def test_pixel_cross_entropy_is_the_mean_over_scored_pixels_of_the_batch() -> None:
    """mmseg's avg_non_ignore: F.cross_entropy with ignore_index, mean over the batch's
    scored pixels; padding is not a pixel."""
    gen = torch.Generator().manual_seed(4)
    logits = torch.randn(2, CLASSES, 4, 4, generator=gen)
    labels = torch.randint(0, CLASSES, (2, 4, 4), generator=gen)
    labels[0, 0] = IGNORE_INDEX
    expected = F.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX)
    torch.testing.assert_close(pixel_cross_entropy(logits, labels), expected)
    per_sample = per_sample_pixel_cross_entropy(logits, labels)
    for i in range(2):
        own = F.cross_entropy(logits[i : i + 1], labels[i : i + 1], ignore_index=IGNORE_INDEX)
        torch.testing.assert_close(per_sample[i], own)


def test_segpgd_weight_moves_from_correct_towards_wrong_pixels() -> None:
    assert segpgd_weight(1, 10) == 0.0
    assert segpgd_weight(10, 10) == pytest.approx(0.45)
    with pytest.raises(ValueError):
        segpgd_weight(0, 10)


def test_segpgd_loss_on_a_two_by_two_map() -> None:
    """Pixels: correct (CE log(1 + e^-2)), wrong (log(1 + e^2)), correct (log(1 + e^-1)),
    ignored; both sums are divided by the 3 scored pixels (the paper's H x W)."""
    logits = torch.tensor([[[2.0, 2.0], [0.0, 5.0]], [[0.0, 0.0], [1.0, 0.0]]])[None]
    labels = torch.tensor([[[0, 1], [1, IGNORE_INDEX]]])
    c_right_a = math.log1p(math.exp(-2))
    c_wrong = math.log1p(math.exp(2))
    c_right_b = math.log1p(math.exp(-1))
    start = pixel_cross_entropy(logits, labels, weighting=segpgd_weight(1, 4))
    assert float(start) == pytest.approx((c_right_a + c_right_b) / 3)
    lam = segpgd_weight(4, 4)  # 3/8
    end = pixel_cross_entropy(logits, labels, weighting=lam)
    expected = ((1 - lam) * (c_right_a + c_right_b) + lam * c_wrong) / 3
    assert float(end) == pytest.approx(expected)
    plain = pixel_cross_entropy(logits, labels)
    assert float(plain) == pytest.approx((c_right_a + c_wrong + c_right_b) / 3)
