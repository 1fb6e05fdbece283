"""Figures drawn with matplotlib's Agg backend: accuracy against eps, per-layer curves and the
shared helpers (`figures.py`), corruptions (`corruptions.py`), curves from attack columns
(`curves.py`, `certified.py`), reliability diagrams and segmentation overlays.

May import: `robench.results.stats`, `robench.results.report` and `robench._core`.
"""
