"""Models: one resolver (`loading.load_model`: a model object held in memory, a registry
name, model card or checkpoint) over one ordered table of model sources (`memory`, `hf:`,
`hf-hub:`, `local-dir:`, timm pretrained tags; docs/models.md), model cards, safe
checkpoints, normalisation inside the model, plugins, trust checks; `zoo/` (robench's timm
models) and `layers/` (Elliptical Attention).

Importing `robench.models.zoo` registers the zoo in timm's registry. This `__init__` imports
nothing, so reading a model card needs no torch.

May import: `robench.data`, `robench.results`, `robench._core`.
"""
