"""Training: `robench train` (small-scale, seeded, DDP under torchrun) and `timm_train`
(runs timm's own train.py with robench's models registered).

May import: `robench.models`, `robench.data`, `robench.results`, `robench._core`.
"""
