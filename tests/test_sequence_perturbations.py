"""The LRA perturbations' edits checked against their definitions by independent counting:
token substitution changes round(rate * n) real tokens (never padding, never to the same token,
always a vocabulary token), pixel noise keeps intensities in range with the asked spread,
occlusion paints one square of the asked size; all depend on the sample's seed alone."""

from __future__ import annotations

import math

import pytest
import torch

from robench._core.errors import ConfigError
from robench.perturbations import build_perturbation
from robench.perturbations.sequences.edits import add_pixel_noise, occlude, substitute_tokens


def _listops(seed: int, length: int = 200, real: int = 150) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.zeros(length, dtype=torch.long)
    tokens[:real] = torch.randint(1, 16, (real,), generator=generator)
    return tokens


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.5, 1.0])
def test_substitution_changes_the_asked_share_of_real_tokens_only(rate: float) -> None:
    counts = []
    for seed in range(40):
        tokens = _listops(seed)
        edited = substitute_tokens(tokens, rate, 16, 0, seed)
        changed = edited != tokens
        assert not changed[150:].any() and (edited[150:] == 0).all()  # padding untouched
        assert (edited[:150] != 0).all() and int(edited.max()) < 16  # vocabulary tokens only
        count = int(changed.sum())
        assert count in (math.floor(rate * 150), math.ceil(rate * 150))
        counts.append(count)
        assert torch.equal(edited, substitute_tokens(tokens, rate, 16, 0, seed))
    # stochastic rounding is unbiased: the mean count is rate * n
    assert sum(counts) / len(counts) == pytest.approx(rate * 150, abs=0.5)


def test_substitution_edits_both_documents_of_a_pair_and_draws_every_other_token() -> None:
    pair = torch.stack([_listops(1, 100, 100), _listops(2, 100, 60)])
    seen: set[int] = set()
    for seed in range(30):
        edited = substitute_tokens(pair, 0.2, 16, 0, seed)
        changed = edited != pair
        assert changed[0].any() and changed[1].any() and not changed[1, 60:].any()
        seen |= set(edited[changed].tolist())
    assert seen == set(range(1, 16))


def test_pixel_noise_keeps_intensities_in_range_with_the_asked_spread() -> None:
    image = torch.full((1024,), 128, dtype=torch.long)
    edited = add_pixel_noise(image, 16 / 255, 256, seed=3)
    assert edited.dtype == torch.long and int(edited.min()) >= 0 and int(edited.max()) <= 255
    assert (edited - image).double().std().item() == pytest.approx(16, rel=0.1)
    dark = add_pixel_noise(torch.zeros(1024, dtype=torch.long), 0.5, 256, seed=3)
    assert int(dark.min()) == 0  # clipped at the darkest level
    assert torch.equal(edited, add_pixel_noise(image, 16 / 255, 256, seed=3))


@pytest.mark.parametrize("size", [1, 4, 8])
def test_occlusion_paints_one_square_of_the_asked_size(size: int) -> None:
    image = torch.full((1024,), 200, dtype=torch.long)
    for seed in range(10):
        edited = occlude(image, size, 0.0, 256, seed).view(32, 32)
        rows, cols = torch.nonzero(edited == 0, as_tuple=True)
        assert len(rows) == size * size
        assert int(rows.max() - rows.min()) + 1 == size == int(cols.max() - cols.min()) + 1


def test_occlusion_refuses_images_that_are_not_square() -> None:
    with pytest.raises(ConfigError, match="not square images"):
        occlude(torch.zeros(1000, dtype=torch.long), 4, 0.0, 256, 0)


class _Sequences:
    def __init__(self, task_name: str) -> None:
        self.task_name, self.vocab_size, self.pad_id, self.max_length = task_name, 16, 0, 40

    def __len__(self) -> int:
        return 6

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return _listops(index, 40, 30), index % 2


def test_a_dataset_is_edited_per_sample_whatever_is_read_before() -> None:
    perturbation = build_perturbation("token-substitution", {"rate": 0.2})
    edited = perturbation.perturb_dataset(_Sequences("listops"), seed=7)
    forward = [edited[i][0] for i in range(6)]
    backward = [edited[i][0] for i in reversed(range(6))][::-1]
    assert all(torch.equal(a, b) for a, b in zip(forward, backward, strict=True))
    assert edited.pad_id == 0 and len(edited) == 6  # the dataset's attributes, forwarded
    other = build_perturbation("token-substitution", {"rate": 0.3}).perturb_dataset(
        _Sequences("listops"), seed=7
    )
    assert not torch.equal(other[0][0], forward[0])
    with pytest.raises(ConfigError, match="edits image, pathfinder data"):
        build_perturbation("pixel-noise", {"std": "8/255"}).check_dataset(_Sequences("listops"))
