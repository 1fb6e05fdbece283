"""Perturbations of LRA sequences (the sequence-classification task), where the Elliptical
Attention paper reports none: `token-substitution` (ListOps, Text, Retrieval: a share of the
real tokens replaced by other vocabulary tokens), `pixel-noise` and `pixel-occlusion` (Image,
Pathfinder: Gaussian noise on the intensities, a square patch painted over).
"""
