"""Training: `robench train` (small-scale, seeded, DDP under torchrun) and `timm_train`
(runs timm's own train.py with robench's models registered).

May import: `robench.tasks` (language-model validation scores as `robench eval` does),
`robench.models`, `robench.data`, `robench.results`, `robench._core`.
"""
