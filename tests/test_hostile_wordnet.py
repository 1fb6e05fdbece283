"""ROBENCH_WORDNET_DIR pointing at files that are not WordNet's (issue 39): PWWS is refused
in one sentence naming the folder, exit 2, and the run leaves no per-sample file behind (it
was exit 3 with REPORT.samples.jsonl left over); empty dict files are refused too, where
PWWS would otherwise find no synonym and report the clean accuracy as robust."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import refused

from robench._core.errors import DataError
from robench.perturbations.text.wordnet import _REQUIRED, DEFAULT_DIR, check_wordnet

pytest.importorskip("nltk", reason="the optional extra robench[text] (nltk)")


def _fill(content: Callable[[str], bytes]) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        folder = root / "wordnet"
        folder.mkdir()
        for name in _REQUIRED:
            (folder / name).write_bytes(content(name))
        return folder

    return build


def _cut_off(root: Path) -> Path:
    """The real dict files (copied: nltk refuses links out of its folder), data.adj cut
    after 20 kB."""
    if not (DEFAULT_DIR / "data.adj").is_file():
        pytest.skip("wordnet-base is not installed: run `make data`")
    folder = root / "wordnet"
    folder.mkdir()
    for name in _REQUIRED:
        shutil.copyfile(DEFAULT_DIR / name, folder / name)
    (folder / "data.adj").write_bytes((DEFAULT_DIR / "data.adj").read_bytes()[:20_000])
    return folder


GARBAGE = {
    "random bytes": (_fill(lambda _: os.urandom(3000)), "UnicodeDecodeError"),
    "text that is not WordNet": (_fill(lambda _: b"hello world\nnot wordnet\n"), "cannot be read"),
    "empty files": (_fill(lambda _: b""), "no synonyms of 'good'"),
    "a cut-off data file": (_cut_off, "points past a data file"),
}


@pytest.mark.parametrize("case", list(GARBAGE))
def test_garbage_wordnet_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    build, expected = GARBAGE[case]
    monkeypatch.setenv("ROBENCH_WORDNET_DIR", str(build(tmp_path)))
    with pytest.raises(DataError, match=expected) as caught:
        check_wordnet()
    assert str(tmp_path / "wordnet") in str(caught.value) and "ROBENCH_WORDNET_DIR" in str(
        caught.value
    )


def test_pwws_on_garbage_wordnet_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROBENCH_WORDNET_DIR", str(_fill(lambda _: os.urandom(3000))(tmp_path)))
    out = tmp_path / "runs" / "r.json"
    args = ["eval", "text_classifier_nano_elliptical_docs", "-s", "pwws", "--limit", "4"]
    refused([*args, "-o", out], tmp_path, f"{tmp_path / 'wordnet'} cannot be read")
