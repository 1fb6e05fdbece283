"""Sweeps: many `robench eval` jobs (models x suites x seeds) from one plan file, run by an
executor (a local pool, SLURM through submitit, or a plugin's), resumable, ending in one
leaderboard per suite (docs/sweeps.md).

`plan` reads the plan, `jobs` derives each job's command line and paths, `state` is the job's
state file, `run_job` runs one job wherever an executor puts it, `executors` is the registry
(`local`, `slurm`), `sweep` decides what runs and `leaderboard` collects the reports. None of
it imports torch: every evaluation runs in its own `robench eval` process.
"""

from robench.evaluation.sweeps.executors import EXECUTORS as EXECUTORS
from robench.evaluation.sweeps.executors import Executor as Executor
from robench.evaluation.sweeps.jobs import SweepJob as SweepJob
from robench.evaluation.sweeps.run_job import run_job as run_job
