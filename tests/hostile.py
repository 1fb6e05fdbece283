"""What every refused hostile input must get: exit 2, one `error:` sentence naming the file
and the fix, no traceback, and no file written, changed or left behind."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from typer.testing import CliRunner

from robench.cli import app


def snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` with its content's sha256 ("dir" for a folder)."""
    return {
        path.relative_to(root).as_posix(): (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        )
        for path in sorted(root.rglob("*"))
    }


def refused(args: Sequence[str], root: Path, *expected: str) -> str:
    """Run `robench ARGS`; assert it is refused as bad input and that nothing under `root`
    changed; the error line (each of `expected` is in it)."""
    before = snapshot(root)
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    line = lines[0]
    assert not line.startswith("error: unexpected"), line
    for text in expected:
        assert text in line, line
    assert snapshot(root) == before, "the refused command wrote or changed files"
    return line
