"""Perturbations of text: the `word-swap` kind (Word Swap on a language-modelling corpus).

`params` registers the kind by its schema (no torch); `swaps` is the pure-Python swapping of
lines of words; `perturbation` applies it to a text dataset for the runner.
"""
