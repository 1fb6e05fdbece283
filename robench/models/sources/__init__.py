"""Model sources: where MODEL comes from. `registry.py` holds `SOURCES`, the one ordered table
`load_model` walks (torch-free, builders named by dotted path); each builder module loads one
kind:

- `memory.py`: a model object held in memory (an `nn.Module`, timm or transformers model,
  the latter through `hf_objects.py`);
- `timm_models.py`: `hf-hub:`, `local-dir:` (timm folders) and timm pretrained tags
  (`resnet50.a1_in1k`);
- `hf_source.py`: `hf:` transformers models, with `hf_tasks.py` (which task a config is),
  `hf_image.py`, `hf_segmentation.py`, `hf_causal_lm.py` and `hf_text_classifier.py`;
- `hf_cache.py`, `model_folder.py`: the local Hugging Face cache and a folder's config.json;
- robench names, cards and checkpoints: the last source, `named` (`models/loading.py`).

This `__init__` imports nothing; import the registry from `robench.models.sources.registry`.
"""
