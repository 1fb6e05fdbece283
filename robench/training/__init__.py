"""Training: `robench train` (small-scale, seeded; image classifiers in `train.py`, with DDP
under torchrun, language models in `train_lm.py`, both on the shared `loop.py`) and
`timm_train` (runs timm's own train.py with robench's models registered).

May import: `robench.tasks` (language-model validation scores as `robench eval` does),
`robench.models`, `robench.data`, `robench.results`, `robench._core`.
"""
