"""Figures drawn with matplotlib's Agg backend: accuracy against eps and the diagnostics'
per-layer curves (`figures.py`, which also holds the shared figure helpers), corruption
heatmaps and bars (`corruptions.py`), accuracy against eps and iterations from attack columns
(`curves.py`) and segmentation overlays (`segmentation.py`).

May import: `robench.results.stats`, `robench.results.report` and `robench._core`.
"""
