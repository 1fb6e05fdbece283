"""PWWS's WordNet synonyms, read offline from Debian's wordnet-base with nltk's reader."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from robench._core.errors import DataError
from robench.perturbations.text import wordnet
from robench.perturbations.text.wordnet import LEXNAMES, is_one_word, synonyms, wordnet_dir

pytestmark = pytest.mark.skipif(
    not (Path("/usr/share/wordnet") / "data.noun").is_file(),
    reason="wordnet-base is not installed: run `make data`",
)


def test_lexnames_match_the_wordnet_manual_page() -> None:
    page = Path("/usr/share/man/man5/lexnames.5WN.gz")
    if not page.is_file():
        pytest.skip("the lexnames manual page is not installed")
    text = gzip.decompress(page.read_bytes()).decode("utf-8", "replace")
    listed = re.findall(r"^(\d\d)\s+(\w+\.\w+)\s+(?:.*\n)?", text, flags=re.MULTILINE)
    names = [name for _, name in sorted(set(listed), key=lambda x: int(x[0]))]
    assert names == list(LEXNAMES)


def test_synonyms_follow_wordswapwordnet() -> None:
    # every synset of "fabulous" (adjective), its lemma names less the word itself
    assert synonyms("fabulous") == ["fab", "mythic", "mythical", "mythologic", "mythological"]
    found = synonyms("running")  # morphy finds "run" too; multi-word lemmas are left out
    assert "run" in found and all("_" not in w for w in found) and "running" not in found
    assert synonyms("qwertyuiop") == []


def test_one_word_rule() -> None:
    assert is_one_word("o'clock") and is_one_word("well-known") and is_one_word("'quoted'")
    assert not is_one_word("a.m.") and not is_one_word("two words") and not is_one_word("--")


def test_missing_wordnet_is_one_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBENCH_WORDNET_DIR", str(tmp_path))
    with pytest.raises(DataError, match="apt-get install wordnet-base"):
        wordnet_dir()
    monkeypatch.delenv("ROBENCH_WORDNET_DIR")
    assert wordnet_dir() == wordnet.DEFAULT_DIR
