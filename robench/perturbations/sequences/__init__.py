"""Perturbations of LRA sequences (the sequence-classification task), where the Elliptical
Attention paper reports none: `token-substitution` (ListOps, Text, Retrieval: a share of the
real tokens replaced by other vocabulary tokens), `pixel-noise` and `pixel-occlusion` (Image,
Pathfinder: Gaussian noise on the intensities, a square patch painted over).

`params` registers the kinds by their schemas (no torch); `edits` holds the per-sequence
edits; `perturbation` applies them to an LRA dataset for the runner, each sample seeded by
its index.
"""
