"""Every repository path that README.md and docs/*.md name in backticks exists.

A span with a slash (`robench/tasks/base.py`, `tasks/base.py`, `attacks/demo.toml`,
`results/stats/metrics.METRICS`, `sweeps/jobs.py`) is resolved against the repository's root
and against the robench/ folders that hold its first folder (robench/ for `tasks/`,
robench/evaluation/ for `sweeps/`); a module path may end in `.NAME` or `:NAME` (what it
defines) and may leave `.py` out. A bare file name (`request.py`) is checked in
docs/architecture.md, which names modules by their file names in the folder it describes: a
file of that name must exist somewhere in the repository (elsewhere a bare name is often the
user's file or another project's). Fenced code blocks (commands that write new files) and
placeholders (`ROOT/<class>`, `REPORT.json`, globs) are not paths.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FILE_SUFFIXES = (".py", ".toml", ".md", ".json", ".jsonl", ".yml", ".yaml", ".txt", ".ipynb")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
# A path's characters: lower case, so placeholders (`ROOT/<class>`, `REPORT.json`) are none.
_PATH_CHARS = re.compile(r"[a-z0-9_.\-/]+")
_DEFINITION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Top-level folders of the repository (and robench's parts) a path may start with. Ignored
# folders are outputs (`runs/` of the demo and the quick start): named by the docs, present
# only after the command that writes them has run.
_IGNORED = {line.strip("/") for line in (ROOT / ".gitignore").read_text().split() if "/" in line}
_TOP = {
    p.name
    for p in ROOT.iterdir()
    if p.is_dir() and not p.name.startswith(".") and p.name not in _IGNORED
}
# robench's parts and their subpackages by name: `sweeps/jobs.py` in the text about
# evaluation/ is robench/evaluation/sweeps/jobs.py. Deeper folders have names as common as
# `html/`, which the docs use for other projects' folders too.
_FOLDERS: dict[str, list[Path]] = {}
for _folder in sorted([*(ROOT / "robench").glob("*/"), *(ROOT / "robench").glob("*/*/")]):
    if _folder.is_dir() and _folder.name != "__pycache__":
        _FOLDERS.setdefault(_folder.name, []).append(_folder.parent)
_FILE_NAMES = {
    p.name for p in ROOT.rglob("*") if p.is_file() and not {".git", ".venv"} & set(p.parts)
}
# Where a bare file name is one of the repository's own: the architecture names modules by
# their file names in the folder it describes. Elsewhere a bare name is often the user's file
# (`classes.txt`) or another project's (RobustBench's `data.py`).
BARE_NAMES_CHECKED = {"architecture.md"}


def _spans(text: str) -> list[str]:
    return _SPAN.findall(_FENCE.sub("", text))


def _meanings(span: str) -> list[str]:
    """The paths `span` may mean: as written (up to a `:NAME`), and without a last `.NAME`
    (`results/stats/metrics.METRICS`); none for a placeholder or a command-line flag."""
    path = span.partition(":")[0]
    head, dot, tail = path.rpartition(".")
    written = [path, head] if dot and _DEFINITION.fullmatch(tail) else [path]
    return [
        p
        for p in written
        if _PATH_CHARS.fullmatch(p) and "//" not in p and not p.startswith(("-", "/", "."))
    ]


def _repository_paths(doc: Path) -> list[str]:
    """The spans of `doc` that name a file or folder of the repository."""
    found = []
    for span in _spans(doc.read_text()):
        meanings = _meanings(span)
        if not meanings:
            continue
        in_a_folder = "/" in span and span.split("/")[0] in _TOP | set(_FOLDERS)
        bare = "/" not in span and span.endswith(FILE_SUFFIXES)
        if in_a_folder or (bare and doc.name in BARE_NAMES_CHECKED):
            found.append(span)
    return found


def _exists(span: str) -> bool:
    if "/" not in span:
        return any(path in _FILE_NAMES for path in _meanings(span))
    bases = [ROOT, *_FOLDERS.get(span.split("/")[0], [])]
    return any(
        candidate.exists()
        for path in _meanings(span)
        for base in bases
        for candidate in (base / path, base / f"{path}.py")
    )


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_named_in_the_docs_exists(doc: Path) -> None:
    missing = sorted({s for s in _repository_paths(doc) if not _exists(s)})
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_checker_reads_paths_and_leaves_placeholders(tmp_path: Path) -> None:
    doc = tmp_path / "architecture.md"
    doc.write_text(
        "`robench/tasks/base.py`, `tasks/base.py`, `results/stats/metrics.METRICS`, "
        "`robench/evaluation/suites.py:load_suite`, `attacks/demo.toml`, `request.py`, "
        "`results/paired_statistic.PairedStatistic`, `gone.py`, `ROOT/<class>/<image>`, "
        "`REPORT.json`, `--out`, `https://example.org/x.py`, `tasks/`\n"
        "```\nrobench eval -o `reports/new.json`\n```\n"
    )
    named = _repository_paths(doc)
    assert named == [
        "robench/tasks/base.py",
        "tasks/base.py",
        "results/stats/metrics.METRICS",
        "robench/evaluation/suites.py:load_suite",
        "attacks/demo.toml",
        "request.py",
        "results/paired_statistic.PairedStatistic",
        "gone.py",
        "tasks/",
    ]
    missing = [s for s in named if not _exists(s)]
    assert missing == ["results/paired_statistic.PairedStatistic", "gone.py"]
