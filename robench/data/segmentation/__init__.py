"""Semantic-segmentation data: images with per-pixel label maps.

A sample is `(image, label_map)`: the image float (C, H, W) in [0, 1] at the evaluation size,
the label map int64 (Hl, Wl) at the label resolution, classes 0..K-1 and `IGNORE_INDEX` for
pixels no class is scored on. `label_maps.py` holds the batch geometry every part shares.
"""
