"""The edits of one sequence (token ids (L,), or (2, L) document pairs), each drawing its
randomness from a `torch.Generator` seeded for that sample alone.

Pixel sequences are the LRA's: row-major grey-scale images whose token ids are intensities
0..V-1 (V = the vocabulary size, 256 for 8-bit images), so an intensity in [0, 1] is the
token round(value * (V - 1)).
"""

from __future__ import annotations

import math

import torch

from robench._core.errors import ConfigError


def substitute_tokens(
    tokens: torch.Tensor, rate: float, vocab_size: int, pad_id: int | None, seed: int
) -> torch.Tensor:
    """`tokens` with round(rate * n) of its n real tokens (stochastic rounding) replaced, each
    by a uniformly drawn vocabulary token other than itself and the padding."""
    generator = torch.Generator().manual_seed(seed)
    flat = tokens.flatten().clone()
    real = torch.nonzero(
        flat != pad_id if pad_id is not None else torch.ones_like(flat, dtype=torch.bool)
    ).flatten()
    count = math.floor(rate * len(real) + float(torch.rand((), generator=generator)))
    chosen = real[torch.randperm(len(real), generator=generator)[:count]]
    # The ids a token may become: the vocabulary without padding, in order; a drawn offset in
    # [1, n) from the token's own place lands on any other id with equal chance.
    allowed = torch.tensor([i for i in range(vocab_size) if i != pad_id], dtype=torch.long)
    if len(allowed) < 2:
        raise ConfigError(
            f"token-substitution needs a vocabulary of at least two tokens besides padding, "
            f"the data has {len(allowed)}; substitute tokens of a task with a vocabulary."
        )
    place = torch.full((vocab_size,), -1, dtype=torch.long)
    place[allowed] = torch.arange(len(allowed))
    offsets = torch.randint(1, len(allowed), (len(chosen),), generator=generator)
    flat[chosen] = allowed[(place[flat[chosen]] + offsets) % len(allowed)]
    return flat.view_as(tokens)


def add_pixel_noise(tokens: torch.Tensor, std: float, vocab_size: int, seed: int) -> torch.Tensor:
    """Intensities plus N(0, std) noise (std in [0, 1] units), rounded and clipped."""
    generator = torch.Generator().manual_seed(seed)
    top = vocab_size - 1
    noise = torch.randn(tokens.shape, generator=generator, dtype=torch.float64) * (std * top)
    return (tokens.double() + noise).round().clamp(0, top).long()


def image_side(length: int) -> int:
    """The side of the square image a pixel sequence of `length` is, row by row."""
    side = math.isqrt(length)
    if side * side != length:
        raise ConfigError(
            f"pixel sequences of length {length} are not square images (LRA's are 32 x 32 = "
            "1024); occlude square images only."
        )
    return side


def occlude(
    tokens: torch.Tensor, size: int, value: float, vocab_size: int, seed: int
) -> torch.Tensor:
    """The image with a `size` x `size` square painted `value` (in [0, 1]), its top-left
    corner uniform over the places where it fits whole."""
    generator = torch.Generator().manual_seed(seed)
    side = image_side(tokens.shape[-1])
    if size > side:
        raise ConfigError(
            f"pixel-occlusion size {size} exceeds the {side} x {side} images; pass size <= {side}."
        )
    top, left = torch.randint(0, side - size + 1, (2,), generator=generator).tolist()
    image = tokens.clone().view(*tokens.shape[:-1], side, side)
    image[..., top : top + size, left : left + size] = round(value * (vocab_size - 1))
    return image.view_as(tokens)
