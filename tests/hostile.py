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
    # Progress lines of work done before the error may precede it; the error is one line.
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    line = errors[0]
    assert not line.startswith("error: unexpected"), line
    for text in expected:
        assert text in line, line
    after = snapshot(root)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"the refused command wrote or changed {changed}"
    return line
