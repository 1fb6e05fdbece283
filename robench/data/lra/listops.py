"""ListOps as the LRA release ships it: `basic_train.tsv`, `basic_val.tsv`, `basic_test.tsv`.

Parentheses are dropped and `]` kept, with fixed ids (VOCABULARY; 0 pads); why, and where
this differs from LRA's pipeline: docs/datasets.md, "Long Range Arena".
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from robench._core.errors import DataError
from robench.data.lra.sequences import SequenceDataset, compact, fitted

FILES = {"train": "basic_train.tsv", "val": "basic_val.tsv", "test": "basic_test.tsv"}
# LRA's ListOps sequence length (lra_benchmarks/listops/configs/base_listops_config.py).
DEFAULT_LENGTH = 2000

OPERATORS = ("[MAX", "[MIN", "[MED", "[SM")
CLOSE = "]"
DIGITS = tuple(str(d) for d in range(10))
PAD = "<pad>"
# Token -> id is the position here; 0 is padding.
VOCABULARY = (PAD, *OPERATORS, CLOSE, *DIGITS)
TOKEN_IDS = {token: i for i, token in enumerate(VOCABULARY)}
CLASSES = list(DIGITS)

_EXPECTED = (
    "one expression of [MAX, [MIN, [MED, [SM, ] and the digits 0-9 (parentheses are ignored), "
    "as in LRA's basic_*.tsv"
)


def looks_like_listops(root: Path) -> bool:
    return any((root / name).is_file() for name in FILES.values())


def tokens_of(source: str) -> list[str]:
    """The expression's tokens: the text split on white space, parentheses dropped."""
    return source.replace("(", " ").replace(")", " ").split()


def check_expression(tokens: list[str]) -> str | None:
    """Why `tokens` is not one well-formed ListOps expression; None when it is."""
    if not tokens:
        return "the expression is empty"
    open_arguments: list[int] = []  # arguments seen so far by each open operator
    top_level = 0
    for position, token in enumerate(tokens, start=1):
        if token not in TOKEN_IDS or token == PAD:
            return f"token {position} is {token!r}, which is not a ListOps token"
        if token in OPERATORS:
            open_arguments.append(0)
            continue
        if token == CLOSE:
            if not open_arguments:
                return f"the ] at token {position} closes no operator"
            if open_arguments.pop() == 0:
                return f"the operator closed at token {position} has no arguments"
        # A digit, or an expression just closed: one argument of the enclosing operator.
        if open_arguments:
            open_arguments[-1] += 1
        else:
            top_level += 1
    if open_arguments:
        return f"{len(open_arguments)} operator(s) are not closed with ]"
    if top_level != 1:
        return f"the line holds {top_level} expressions side by side"
    return None


def read_listops(path: Path, max_length: int, truncate: bool) -> tuple[list[np.ndarray], list[int]]:
    """The token ids and labels of one ListOps TSV file; a DataError naming the file and line
    of the first row that is not an expression and its 0-9 value."""
    sequences: list[np.ndarray] = []
    targets: list[int] = []
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            rows = csv.reader(handle, delimiter="\t")
            header = next(rows, None)
            if header is None or "Source" not in header or "Target" not in header:
                raise DataError(
                    f"{path} does not start with the header row Source<TAB>Target; expected "
                    "LRA's ListOps TSV (basic_train.tsv, basic_val.tsv, basic_test.tsv)."
                )
            source_at, target_at = header.index("Source"), header.index("Target")
            for row in rows:
                line = rows.line_num
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    raise DataError(
                        f"{path} line {line} has {len(row)} tab-separated fields, but the header "
                        f"has {len(header)}; fix or remove the line."
                    )
                tokens = tokens_of(row[source_at])
                problem = check_expression(tokens)
                if problem is not None:
                    raise DataError(
                        f"{path} line {line} is not a ListOps expression ({problem}); expected "
                        f"{_EXPECTED}; fix or remove the line."
                    )
                if row[target_at].strip() not in DIGITS:
                    raise DataError(
                        f"{path} line {line} has Target {row[target_at]!r}; expected the "
                        "expression's value, an integer 0-9; fix or remove the line."
                    )
                ids = compact([TOKEN_IDS[t] for t in tokens])
                sequences.append(
                    fitted(ids, max_length, truncate=truncate, where=f"{path} line {line}")
                )
                targets.append(int(row[target_at]))
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path} is not UTF-8 text ({exc.reason}); expected LRA's ListOps TSV."
        ) from None
    except csv.Error as exc:
        raise DataError(
            f"{path} cannot be read as TSV ({exc}); expected LRA's ListOps TSV."
        ) from None
    return sequences, targets


def open_listops(
    root: Path, split: str, max_length: int | None, truncate: bool | None
) -> SequenceDataset:
    """ROOT/basic_<split>.tsv as token ids padded to `max_length` (default 2000, LRA's); a
    longer expression is an error unless `truncate` (a cut expression has no value)."""
    path = root / FILES[split]
    if not path.is_file():
        present = [name for name in FILES.values() if (root / name).is_file()]
        raise DataError(
            f"{root} has no {FILES[split]} for the {split} split (it has "
            f"{', '.join(present) or 'no ListOps file'}); expected LRA's listops-1000 folder "
            "with basic_train.tsv, basic_val.tsv and basic_test.tsv."
        )
    length = DEFAULT_LENGTH if max_length is None else max_length
    sequences, targets = read_listops(path, length, bool(truncate))
    return SequenceDataset(
        root=root,
        task_name="listops",
        split=split,
        sequences=sequences,
        targets=targets,
        classes=list(CLASSES),
        vocab_size=len(VOCABULARY),
        max_length=length,
        pad_id=TOKEN_IDS[PAD],
        class_index_note="the class is the expression's value, 0-9",
    )
