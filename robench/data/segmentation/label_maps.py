"""Batches of label maps: how maps of different sizes share one tensor, and how a model's
logits are brought to each map's resolution.

A batch's targets are int64 (B, Hl, Wl). Maps of different sizes (ADE20K's images vary) are
placed at the top-left of the largest and the rest is `PAD_INDEX`: outside the map, not a pixel
at all. `IGNORE_INDEX` marks pixels inside the map that no class is scored on (ADE20K's
"other", VOC's object borders). Both are left out of every count and loss.

A model returns logits (B, K, h, w) at any resolution (a patch grid, the input size); they are
compared with the labels at the label resolution, as mmsegmentation does, by resizing each
sample's logits bilinearly (align_corners=False) to its own map's size.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

IGNORE_INDEX = 255  # inside the map, not scored (mmsegmentation's ignore_index)
PAD_INDEX = -1  # outside the map: padding of a smaller map in a batch


def pad_label_maps(maps: Sequence[torch.Tensor]) -> torch.Tensor:
    """Stack (Hl, Wl) maps into (B, max Hl, max Wl), each top-left, the rest PAD_INDEX."""
    height = max(m.shape[0] for m in maps)
    width = max(m.shape[1] for m in maps)
    out = torch.full((len(maps), height, width), PAD_INDEX, dtype=torch.int64)
    for row, label_map in zip(out, maps, strict=True):
        row[: label_map.shape[0], : label_map.shape[1]] = label_map
    return out


def label_sizes(labels: torch.Tensor) -> list[tuple[int, int]]:
    """The (height, width) of each (H, W) map of `labels` (B, H, W) inside its padding, read
    from the device in one transfer (not two per map: a GPU waits on each)."""
    inside = labels != PAD_INDEX  # (B, H, W)
    sizes = torch.stack([inside.any(dim=2).sum(dim=1), inside.any(dim=1).sum(dim=1)], dim=1)
    return [(height, width) for height, width in sizes.tolist()]


def logits_at_labels(
    logits: torch.Tensor, labels: torch.Tensor, sizes: list[tuple[int, int]] | None = None
) -> list[torch.Tensor]:
    """Each sample's logits (K, h, w) resized to its label map's size: a list of (K, Hl, Wl).
    `sizes`: the maps' `label_sizes`, when the caller has them."""
    out = []
    for sample_logits, size in zip(logits, sizes or label_sizes(labels), strict=True):
        if tuple(sample_logits.shape[-2:]) != size:
            sample_logits = F.interpolate(
                sample_logits[None], size=size, mode="bilinear", align_corners=False
            )[0]
        out.append(sample_logits)
    return out


def scored_pixels(label_map: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """The (Hl, Wl) map cut to its `size` (`label_sizes`): labels, IGNORE_INDEX included."""
    height, width = size
    return label_map[:height, :width]
