"""Training: `robench train` (small-scale, seeded; one trainer per kind of model, all on the
shared `loop.py`) and `timm_train` (runs timm's own train.py with robench's models registered).

May import: `robench.tasks` (validation scores as `robench eval` does), `robench.perturbations`
(the per-pixel cross-entropy dense attacks ascend, for label maps of several sizes),
`robench.models`, `robench.data`, `robench.results`, `robench._core`.
"""
