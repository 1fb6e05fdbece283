"""The lm-evaluation-harness task robench is compared with: rolling log-likelihoods of JSON-lines
documents, scored as word and byte perplexity and bits per byte.

One copy for benchmarks/bench_lm_eval.py (speed) and tests/test_lm_eval_parity.py (equal
numbers), so both run lm-eval on the same task.
"""

from __future__ import annotations

from pathlib import Path

METRICS = ("word_perplexity", "byte_perplexity", "bits_per_byte")

_TASK_YAML = """\
task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: loglikelihood_rolling
doc_to_text: ""
doc_to_target: text
metric_list:
  - metric: word_perplexity
  - metric: byte_perplexity
  - metric: bits_per_byte
"""


def write_task(tasks: Path, task: str, data: Path) -> Path:
    """Write task `task` over the JSON-lines file `data` into the folder `tasks` (lm-eval's
    `TaskManager(include_path=tasks)` finds it); return the YAML file."""
    tasks.mkdir(parents=True, exist_ok=True)
    path = tasks / f"{task}.yaml"
    path.write_text(_TASK_YAML.format(task=task, data=data))
    return path
