"""Models: one resolver (`loading.load_model`) over one ordered table of model sources
(docs/models.md; docs/architecture.md, "Model sources"), model cards, safe checkpoints,
normalisation inside the model, trust checks; `zoo/` (robench's models) and `layers/`.

This `__init__` imports nothing, so reading a model card needs no torch.

May import: `robench.data`, `robench.results`, `robench._core`.
"""
