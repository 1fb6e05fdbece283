"""Long Range Arena data (Tay et al. 2021): readers for the released layouts of its five tasks,
and seeded offline generators for its two synthetic ones, ListOps and Pathfinder.

The contract the `sequence-classification` task reads:

- `SequenceDataset` (robench/data/lra/sequences.py), a torch Dataset whose items are
  `(tokens, label)`: tokens a torch.long tensor of shape (L,), or (2, L) for a retrieval pair
  (the two documents stacked), label an int class index. Attributes: `vocab_size: int` (ids
  are 0 .. vocab_size - 1), `max_length: int` (L), `num_classes: int`, `classes: list[str]`,
  `pad_id: int | None`, `pair: bool`, `task_name: str` ("listops", "text", "retrieval",
  "image", "pathfinder"), `targets: list[int]`, and what every robench dataset has (`root`,
  `kind` = the layout name, `split`, `task` = "sequence-classification",
  `class_index_note`, `preprocessing_note`, `output_classes` = None, `label_space` = None).
- Token sequences (ListOps, Text, Retrieval) are padded to L with `pad_id` 0; pixel sequences
  (Image: 32 * 32 = 1024 grey levels; Pathfinder: H * W, 1024 for pathfinder32) have a fixed
  length and `pad_id` None.
- `open_lra(path, task_name, split="test", max_length=None, *, truncate=None,
  difficulty=None) -> SequenceDataset`: one split ("train", "val", "test") of a task's
  released layout. A sequence longer than a given `max_length` is a DataError unless
  `truncate=True`.
- Data layouts registered in robench.data (`open_dataset(path, layout=...)`, a suite's
  `[datasets.NAME] layout`): `lra-listops`, `lra-text`, `lra-retrieval`, `lra-image`,
  `lra-pathfinder`, each detected from its released files except that an image folder is
  chosen by name only.
- Tokens, as LRA makes them: ListOps `[MAX`, `[MIN`, `[MED`, `[SM`, `]`, digits 0-9 (ids
  1..15, listops.VOCABULARY; parentheses dropped); Text and Retrieval a document's bytes,
  id = byte + 1 (vocabulary 257); Image grey levels 0..255 by tf.image.rgb_to_grayscale's
  formula; Pathfinder pixels 0..255.

docs/datasets.md ("Long Range Arena") lists every layout's files. The generators
(`listops_generator`, `pathfinder_generator`) write the released layouts, so generated data
goes through the same readers; `robench generate` runs them.
"""

from __future__ import annotations

from robench.data.lra.layouts import LRA_TASKS, detect_lra, open_lra
from robench.data.lra.sequences import SEQUENCE_TASK, SequenceDataset

__all__ = ["LRA_TASKS", "SEQUENCE_TASK", "SequenceDataset", "detect_lra", "open_lra"]
