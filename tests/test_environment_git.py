"""The report's git commit is read from the repository's files: it must equal what git says
in every layout git leaves (loose refs, packed refs, detached HEAD, a worktree)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from robench.evaluation.environment import git_sha


def _git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(cwd),
    }
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("GIT_DIR", raising=False)
    root = tmp_path / "project"
    (root / "src" / "deep").mkdir(parents=True)
    _git(root, "init", "-q")
    (root / "a.txt").write_text("one\n")
    _git(root, "add", "a.txt")
    _git(root, "commit", "-q", "-m", "first")
    (root / "a.txt").write_text("two\n")
    _git(root, "commit", "-q", "-am", "second")
    return root


def test_loose_ref_from_a_subfolder(repo: Path) -> None:
    head = _git(repo, "rev-parse", "HEAD")
    assert len(head) == 40
    assert git_sha(repo / "src" / "deep") == head


def test_packed_ref(repo: Path) -> None:
    _git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert git_sha(repo) == _git(repo, "rev-parse", "HEAD")


def test_detached_head(repo: Path) -> None:
    first = _git(repo, "rev-parse", "HEAD~1")
    _git(repo, "checkout", "-q", first)
    assert git_sha(repo) == first


def test_worktree_on_another_branch(repo: Path, tmp_path: Path) -> None:
    first = _git(repo, "rev-parse", "HEAD~1")
    _git(repo, "branch", "old", first)
    _git(repo, "pack-refs", "--all")  # the worktree's branch lives in the shared packed-refs
    tree = tmp_path / "tree"
    _git(repo, "worktree", "add", "-q", str(tree), "old")
    assert git_sha(tree) == first
    assert git_sha(repo) == _git(repo, "rev-parse", "HEAD")


def test_no_repository_or_no_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GIT_DIR", raising=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    _git(empty, "init", "-q")  # a branch without commits
    assert git_sha(empty) is None
    (tmp_path / "empty" / ".git" / "HEAD").write_text("garbage\n")
    assert git_sha(empty) is None
    outside = tmp_path / "outside"
    outside.mkdir()
    if not any((folder / ".git").exists() for folder in (outside, *outside.parents)):
        assert git_sha(outside) is None


def test_a_deleted_working_directory_has_no_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert git_sha() is None
