"""Built-in text-classification data: paragraphs of the Python docs, labelled by their part.

What a paragraph is, the file-stratified split and the class balance:
docs/text-classification.md, "Built-in: `python-docs-sections`".
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from robench._core.errors import DataError

# The parts with enough prose for both splits. Left out: the small or retired ones (distutils,
# distributing, install, installing, includes) and "using", whose largest file falls in test.
DOCS_SECTIONS = (
    "c-api",
    "extending",
    "faq",
    "howto",
    "library",
    "reference",
    "tutorial",
    "whatsnew",
)
MIN_WORDS = 12
TEST_EVERY = 5  # every fifth file of a part, by hash rank, is a test file
_ROLE = re.compile(r":[\w:.+-]+:`(?:[^`<]*?<([^>`]*)>|([^`]*))`")
_LITERAL = re.compile(r"``([^`]*)``")
_HEADING = re.compile(r"^([=\-~^\"'*#+`:.])\1{2,}\s*$")


def _clean(block: str) -> str:
    """A paragraph's text: roles and literals reduced to their text, one line."""
    text = _ROLE.sub(
        lambda m: (m.group(2) if m.group(2) is not None else m.group(1)).strip(), block
    )
    text = _LITERAL.sub(r"\1", text)
    text = text.replace("`", "")
    return " ".join(text.split())


def _is_prose(block: str) -> bool:
    lines = block.split("\n")
    if block[:1].isspace() or block.startswith(".."):  # code, directive content, comments
        return False
    if any(_HEADING.match(line) for line in lines):  # a title with its underline
        return False
    return len(block.split()) >= MIN_WORDS


def paragraphs(text: str) -> list[str]:
    """The prose paragraphs of one reStructuredText file, cleaned."""
    blocks = re.split(r"\n\s*\n", text.replace("\r\n", "\n"))
    return [_clean(block) for block in blocks if block.strip() and _is_prose(block.strip("\n"))]


def _rank_key(relative: str) -> str:
    return hashlib.sha256(relative.encode("utf-8")).hexdigest()


def section_files(root: Path, split: str) -> dict[str, list[Path]]:
    """The files of each part in `split` ("train", "test" or "all"), in hash order."""
    if split not in ("train", "test", "all"):
        raise DataError(
            f"the built-in python-docs-sections data has no split {split!r}; expected "
            "'train', 'test' or 'all'."
        )
    chosen: dict[str, list[Path]] = {}
    for section in DOCS_SECTIONS:
        files = sorted(
            (root / section).rglob("*.rst.txt"),
            key=lambda p: _rank_key(p.relative_to(root).as_posix()),
        )
        chosen[section] = [
            path
            for rank, path in enumerate(files)
            if split == "all" or (rank % TEST_EVERY == 0) == (split == "test")
        ]
    return chosen


def read_docs_sections(root: Path, split: str) -> tuple[list[str], list[int]]:
    """Every prose paragraph of `split`, with its part's index in `DOCS_SECTIONS`."""
    texts: list[str] = []
    labels: list[int] = []
    for label, (_, files) in enumerate(section_files(root, split).items()):
        for path in files:
            found = paragraphs(path.read_text(encoding="utf-8"))
            texts += found
            labels += [label] * len(found)
    return texts, labels
