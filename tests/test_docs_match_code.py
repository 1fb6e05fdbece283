"""Statements in the docs and docstrings that the code can contradict are checked against it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from robench.results.report.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "robench"


def _section(text: str, heading: str) -> str:
    """The body of the markdown section titled `heading`, up to the next heading."""
    match = re.search(rf"^#+ {re.escape(heading)}\n(.*?)(?=^#)", text, re.S | re.M)
    assert match, f"section {heading!r} is gone"
    return match.group(1)


def test_architecture_states_the_report_schema_version_the_code_writes() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    body = _section(text, "Report schema (`robench/results/report/schema.py`)")
    stated = re.search(r"^Version (\d+)", body.strip())
    assert stated, "docs/architecture.md no longer opens its report section with 'Version N'"
    assert int(stated.group(1)) == SCHEMA_VERSION


def test_formats_states_the_report_schema_version_the_code_writes() -> None:
    text = (ROOT / "docs" / "formats.md").read_text()
    stated = re.search(r"Schema version (\d+)", text)
    assert stated and int(stated.group(1)) == SCHEMA_VERSION


def _robench_imports(path: Path) -> set[str]:
    """The robench parts `path` imports, at module level or inside functions."""
    parts = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        parts |= {n.split(".")[1] for n in names if n.startswith("robench.")}
    return parts


def test_every_part_imports_only_what_its_docstring_says_it_may() -> None:
    """A part's `May import:` list names every other part its modules import."""
    checked = 0
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        listed = re.search(r"May import:(.*)", doc, re.S)
        part = init.parent.name
        assert listed, f"robench/{part}/__init__.py does not say what it may import"
        allowed = set(re.findall(r"`robench\.(\w+)`", listed.group(1))) | {part}
        imported = set().union(*(_robench_imports(p) for p in init.parent.rglob("*.py")))
        assert imported <= allowed, f"robench.{part} imports {imported - allowed} unlisted"
        checked += 1
    assert checked >= 11


def test_the_docs_index_links_every_page_and_the_readme_links_the_index() -> None:
    """docs/README.md is the map: every file of docs/ is linked from it (errors.md too)."""
    docs = ROOT / "docs"
    index = (docs / "README.md").read_text()
    linked = set(re.findall(r"\]\(([^)#]+)", index))
    pages = {p.name for p in docs.iterdir() if p.is_file() and p.name != "README.md"}
    assert pages - linked == set(), f"docs/README.md does not link {sorted(pages - linked)}"
    assert "docs/README.md" in (ROOT / "README.md").read_text()
