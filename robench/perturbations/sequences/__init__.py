"""Perturbations of LRA sequences (the sequence-classification task), where the Elliptical
Attention paper reports none: `token-substitution`, `pixel-noise`, `pixel-occlusion`
(docs/sequence-classification.md).
"""
