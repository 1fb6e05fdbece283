"""Long Range Arena data (Tay et al. 2021): readers for the released layouts of its five tasks,
and seeded offline generators for its two synthetic ones, ListOps and Pathfinder.

Layouts, tokens, the `SequenceDataset` contract and how each reader follows LRA:
docs/datasets.md, "Long Range Arena".
"""

from __future__ import annotations

from robench.data.lra.layouts import LRA_TASKS, detect_lra, open_lra
from robench.data.lra.sequences import SEQUENCE_TASK, SequenceDataset

__all__ = ["LRA_TASKS", "SEQUENCE_TASK", "SequenceDataset", "detect_lra", "open_lra"]
