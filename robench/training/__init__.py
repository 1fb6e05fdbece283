"""Training: `robench train` (small-scale, seeded; image classifiers and segmenters in
`train.py`, their task's loss and validation in `objectives.py`, with DDP under torchrun,
language models in `train_lm.py`, text classifiers in `train_text.py` (`text_init.py`: from
a pretrained language model's backbone), all on the shared `loop.py`) and `timm_train` (runs timm's
own train.py with robench's models registered).

May import: `robench.tasks` (validation scores as `robench eval` does), `robench.perturbations`
(the per-pixel cross-entropy dense attacks ascend, for label maps of several sizes),
`robench.models`, `robench.data`, `robench.results`, `robench._core`.
"""
