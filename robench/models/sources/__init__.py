"""Model sources: where MODEL comes from. `registry.py` holds `SOURCES`, the one ordered table
`load_model` walks (torch-free, builders named by dotted path); each builder module loads one
kind (docs/architecture.md, "Model sources").

This `__init__` imports nothing; import the registry from `robench.models.sources.registry`.
"""
