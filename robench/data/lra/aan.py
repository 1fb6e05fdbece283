"""AAN document retrieval (LRA's Retrieval task): `new_aan_pairs.{train,eval,test}.tsv`.

Fields and cutting as LRA reads them (lra_benchmarks/matching/input_pipeline.py): tab-split,
no quoting, `label id1 id2 text1 text2`; docs/datasets.md, "Long Range Arena".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from robench._core.errors import DataError
from robench.data.lra.byte_tokens import BYTE_OFFSET, PAD_ID, VOCAB_SIZE, raw_bytes
from robench.data.lra.sequences import SequenceDataset, cut_note, fitted

FILES = {
    "train": "new_aan_pairs.train.tsv",
    "val": "new_aan_pairs.eval.tsv",
    "test": "new_aan_pairs.test.tsv",
}
CLASSES = ["not-cited", "cited"]
DEFAULT_LENGTH = 4000
_FIELDS = 5


def looks_like_aan(root: Path) -> bool:
    return any((root / name).is_file() for name in FILES.values())


def _label(field: bytes) -> int | None:
    try:
        value = float(field.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    return int(value) if value in (0.0, 1.0) else None


def read_pairs(
    path: Path, max_length: int, truncate: bool
) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[int], int]:
    """The document pairs and labels of one AAN TSV file, and how many documents were cut;
    a DataError naming the file and line of a row that is not a label and two documents."""
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    targets: list[int] = []
    cut = 0
    with path.open("rb") as handle:
        for line, text in enumerate(handle, start=1):
            text = text.rstrip(b"\r\n")
            if not text.strip():
                continue
            fields = text.split(b"\t")
            if len(fields) != _FIELDS:
                raise DataError(
                    f"{path} line {line} has {len(fields)} tab-separated fields, so it is not "
                    "a label and two documents; expected 5 (label, id1, id2, text1, text2) as "
                    "in LRA's new_aan_pairs.*.tsv; fix or remove the line."
                )
            label = _label(fields[0])
            if label is None:
                raise DataError(
                    f"{path} line {line} has label {fields[0][:20].decode(errors='replace')!r}; "
                    "expected 0 or 1 (e.g. 1.0) in the first field; fix or remove the line."
                )
            documents = []
            for number, field in enumerate(fields[3:], start=1):
                raw = raw_bytes(field)
                cut += len(raw) > max_length
                where = f"{path} line {line} (document {number})"
                documents.append(fitted(raw, max_length, truncate=truncate, where=where))
            pairs.append((documents[0], documents[1]))
            targets.append(label)
    return pairs, targets, cut


def open_aan(
    root: Path, split: str, max_length: int | None, truncate: bool | None
) -> SequenceDataset:
    """ROOT/new_aan_pairs.<split>.tsv as pairs of byte ids, each padded to `max_length`."""
    path = root / FILES[split]
    if not path.is_file():
        raise DataError(
            f"{root} has no {FILES[split]} for the {split} split; expected LRA's tsv_data "
            "folder with new_aan_pairs.train.tsv, new_aan_pairs.eval.tsv and "
            "new_aan_pairs.test.tsv."
        )
    length = DEFAULT_LENGTH if max_length is None else max_length
    cut_asked = truncate if truncate is not None else max_length is None
    pairs, targets, cut = read_pairs(path, length, cut_asked)
    note = cut_note(cut, 2 * len(pairs), "documents", length)
    return SequenceDataset(
        root=root,
        task_name="retrieval",
        split=split,
        sequences=pairs,
        targets=targets,
        classes=list(CLASSES),
        vocab_size=VOCAB_SIZE,
        max_length=length,
        pad_id=PAD_ID,
        pair=True,
        offset=BYTE_OFFSET,
        class_index_note="1 when the two papers are linked by a citation (AAN), else 0",
        preprocessing_note=note,
    )
