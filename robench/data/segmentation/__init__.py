"""Semantic-segmentation data: images with per-pixel label maps (docs/segmentation-data.md);
`label_maps.py` holds the batch geometry every part shares.
"""
