"""Model sources: where MODEL's weights come from when it is not a robench name, card or
checkpoint. `registry.py` holds `SOURCES` (torch-free, builders named by dotted path);
each builder module loads one kind of folder:

- `timm_models.py`: `hf-hub:`, `local-dir:` (timm folders) and timm pretrained tags
  (`resnet50.a1_in1k`);
- `hf_source.py`: `hf:` transformers models, with `hf_tasks.py` (which task a config is),
  `hf_image.py`, `hf_segmentation.py`, `hf_causal_lm.py` and `hf_text_classifier.py`;
- `hf_cache.py`, `model_folder.py`: the local Hugging Face cache and a folder's config.json.

This `__init__` imports nothing; import the registry from `robench.models.sources.registry`.
"""
