"""Segmentation masks drawn over their image: ground truth beside each model's prediction.

Every map is blended over a greyed copy of the image (so the scene stays readable under the
colours), one colour per class; pixels whose label is no class (the ignore index, padding)
are left uncoloured. Torch-free: the caller runs the models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from robench.results.plots.figures import NOTE_SIZE, figure_legend, new_figure

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.figure import Figure

MASK_ALPHA = 0.6  # weight of the class colour over the greyed image
# Background first, then distinct colours (tab10's order): garments stand out on grey.
CLASS_COLOURS = (
    "#3b3b3b",
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#f7e04b",
)


def class_colours(n_classes: int) -> np.ndarray:
    """(K, 3) RGB in [0, 1]: `CLASS_COLOURS`, then matplotlib's tab20 for more classes."""
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.colors import to_rgb

    shown = [to_rgb(c) for c in CLASS_COLOURS[:n_classes]]
    extra = colormaps["tab20"]
    shown += [extra(i % 20)[:3] for i in range(n_classes - len(shown))]
    return np.asarray(shown, dtype=float)


def blend(image: np.ndarray, labels: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """`labels` (H, W) coloured over a greyed `image` (H, W, 3); other values left grey."""
    import numpy as np

    grey = np.repeat(image.mean(axis=-1, keepdims=True), 3, axis=-1)
    scored = (labels >= 0) & (labels < len(colours))
    painted = colours[np.where(scored, labels, 0)]
    mixed = (1 - MASK_ALPHA) * grey + MASK_ALPHA * painted
    return np.where(scored[..., None], mixed, grey).clip(0.0, 1.0)


def segmentation_overlay_figure(
    image: np.ndarray,
    labels: np.ndarray,
    predictions: Mapping[str, np.ndarray],
    class_names: Sequence[str],
    *,
    title: str,
    captions: Mapping[str, str] | None = None,
    note: str | None = None,
) -> Figure:
    """The image, its ground truth and every prediction (panel title -> (H, W) map), one
    colour per class; `captions` (panel title -> text) go under the panels' titles."""
    import numpy as np
    from matplotlib.patches import Patch

    colours = class_colours(len(class_names))
    panels = {"image": np.asarray(image, dtype=float)}
    for name, shown in {"ground truth": labels, **predictions}.items():
        panels[name] = blend(panels["image"], np.asarray(shown), colours)
    fig = new_figure(2.5 * len(panels) + 1.8, 3.5)
    axes = fig.subplots(1, len(panels))
    for ax, (name, shown) in zip(axes, panels.items(), strict=True):
        ax.imshow(shown, interpolation="nearest")
        caption = (captions or {}).get(name)
        ax.set_title(name + (f"\n{caption}" if caption else ""), fontsize=8)
        ax.set(xticks=[], yticks=[])
    present = np.unique(np.concatenate([np.ravel(labels), *map(np.ravel, predictions.values())]))
    entries = [(Patch(color=colours[k]), class_names[k]) for k in present if 0 <= k < len(colours)]
    figure_legend(fig, entries, loc="outside right center")
    fig.suptitle(title, fontsize=11)
    if note:
        fig.supxlabel(note, fontsize=NOTE_SIZE, color="0.25")
    return fig
