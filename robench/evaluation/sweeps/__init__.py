"""Sweeps: many `robench eval` jobs (models x suites x seeds) from one plan file, run by an
executor (a local pool, SLURM through submitit, or a plugin's), resumable, ending in one
leaderboard per suite (docs/sweeps.md; its modules: docs/architecture.md, "Sweeps"). None of
it imports torch: every evaluation runs in its own `robench eval` process.
"""

from robench.evaluation.sweeps.executors import EXECUTORS as EXECUTORS
from robench.evaluation.sweeps.executors import Executor as Executor
from robench.evaluation.sweeps.jobs import SweepJob as SweepJob
from robench.evaluation.sweeps.run_job import run_job as run_job
