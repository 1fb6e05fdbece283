"""Long Range Arena data (Tay et al. 2021): readers for the released layouts of its five tasks,
and seeded offline generators for its two synthetic ones, ListOps and Pathfinder.

The contract the `sequence-classification` task reads is `SequenceDataset`
(robench/data/lra/sequences.py, which lists its attributes): items `(tokens, label)`, tokens
(L,), or (2, L) for a retrieval pair. `open_lra` (layouts.py) reads one split of a task's
released layout; the data layouts `lra-listops`, `lra-text`, `lra-retrieval`, `lra-image` and
`lra-pathfinder` are registered in robench.data, each detected from its released files except
that an image folder is chosen by name only. Tokens, as LRA makes them: ListOps `[MAX`, `[MIN`,
`[MED`, `[SM`, `]`, digits 0-9 (ids 1..15, listops.VOCABULARY; parentheses dropped); Text and
Retrieval a document's bytes, id = byte + 1 (vocabulary 257); Image grey levels 0..255 by
tf.image.rgb_to_grayscale's formula; Pathfinder pixels 0..255.

docs/datasets.md ("Long Range Arena") lists every layout's files. The generators
(`listops_generator`, `pathfinder_generator`) write the released layouts, so generated data
goes through the same readers; `robench generate` runs them.
"""

from __future__ import annotations

from robench.data.lra.layouts import LRA_TASKS, detect_lra, open_lra
from robench.data.lra.sequences import SEQUENCE_TASK, SequenceDataset

__all__ = ["LRA_TASKS", "SEQUENCE_TASK", "SequenceDataset", "detect_lra", "open_lra"]
