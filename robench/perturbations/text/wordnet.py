"""WordNet synonyms for PWWS, as TextAttack's `WordSwapWordNet` finds them, read offline from
Debian's `wordnet-base` dict files with nltk's own reader (docs/text-classification.md, PWWS).

Debian's dict files lack two small files nltk's reader expects: `lexnames`, the fixed table of
WordNet 3.0's 45 lexicographer files (written out below, as `man 5 lexnames` lists it), and
the OMW mapping, needed only for other versions.
"""

from __future__ import annotations

import functools
import io
import os
import warnings
from pathlib import Path
from typing import Any

from robench._core.errors import DataError, first_line
from robench.perturbations.text.word_spans import word_spans

DEFAULT_DIR = Path("/usr/share/wordnet")
# WordNet 3.0's lexicographer files from 00; each one's category is its part of speech's.
_CATEGORIES = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event",
    "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object",
    "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
    "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
    "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
)  # fmt: skip
# What nltk's parser raises (besides its WordNetError) on files that are not WordNet's: bytes
# that are not text, lines without the fields it splits, offsets into nothing.
_PARSE_ERRORS = (UnicodeDecodeError, ValueError, IndexError, KeyError, OSError, StopIteration)
# The dict files nltk's reader opens: each part of speech's data, index and exceptions.
_REQUIRED = tuple(
    name
    for pos in ("noun", "verb", "adj", "adv")
    for name in (f"data.{pos}", f"index.{pos}", f"{pos}.exc")
)


def wordnet_dir() -> Path:
    root = Path(os.environ.get("ROBENCH_WORDNET_DIR") or DEFAULT_DIR)
    missing = [name for name in _REQUIRED if not (root / name).is_file()]
    if missing:
        raise DataError(
            f"WordNet is not installed (no {missing[0]} in {root}); PWWS reads its synonyms "
            "from it: run `make data` or `sudo apt-get install wordnet-base`, or set "
            "ROBENCH_WORDNET_DIR to a folder of WordNet 3.0 dict files."
        )
    return root


@functools.cache
def _reader(root: Path) -> Any:
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    lexnames = "".join(
        f"{i:02d}\t{name}\t{_CATEGORIES[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES)
    )

    class DictFilesReader(WordNetCorpusReader):  # type: ignore[misc]
        def open(self, fileid: str) -> Any:
            if fileid == "lexnames" and not (root / "lexnames").is_file():
                return io.StringIO(lexnames)
            return super().open(fileid)

        def map_wn(self, version: str = "wordnet") -> None:
            return None  # the OMW mapping: multilingual lookups only, never used here

    if str(root) not in nltk.data.path:  # nltk reads corpora only under its data paths
        nltk.data.path.append(str(root))
    with warnings.catch_warnings():  # "multilingual functions are not available"
        warnings.simplefilter("ignore")
        return DictFilesReader(str(root), None)


def is_one_word(text: str) -> bool:
    """TextAttack's `is_one_word`: its word splitter (`word_spans`) finds exactly one word
    (its homoglyph characters never occur in WordNet's lemmas)."""
    return len(word_spans(text)) == 1


def synonyms(word: str) -> list[str]:
    """PWWS's candidates for `word`, sorted (TextAttack returns them as an unordered set);
    dict files nltk cannot parse are one DataError naming their folder."""
    from nltk.corpus.reader.wordnet import WordNetError

    root = wordnet_dir()
    try:
        with warnings.catch_warnings():  # nltk warns, then returns None, for a cut-off file
            warnings.simplefilter("ignore")
            found = _reader(root).synsets(word)
    except (*_PARSE_ERRORS, WordNetError) as exc:
        raise _unreadable(root, exc) from None
    if any(synset is None for synset in found):
        raise _unreadable(root, WordNetError(f"an index entry of {word!r} points past a data file"))
    names = {name for synset in found for name in synset.lemma_names()}
    return sorted(n for n in names if n != word and "_" not in n and is_one_word(n))


def check_wordnet() -> None:
    """Refuse a missing or unreadable WordNet before any sample is attacked: "good" must have
    synonyms (33 in WordNet 3.0); empty files would leave PWWS without a swap."""
    if not synonyms("good"):
        from nltk.corpus.reader.wordnet import WordNetError

        raise _unreadable(wordnet_dir(), WordNetError("no synonyms of 'good': empty files?"))


def _unreadable(root: Path, exc: Exception) -> DataError:
    where = (
        "set ROBENCH_WORDNET_DIR to a folder of WordNet 3.0 dict files, or unset it to use "
        f"{DEFAULT_DIR}"
        if os.environ.get("ROBENCH_WORDNET_DIR")
        else "reinstall them (`sudo apt-get install --reinstall wordnet-base`)"
    )
    reason = type(exc).__name__ + (f": {first_line(exc)}" if str(exc) else "")
    return DataError(f"the WordNet dict files in {root} cannot be read ({reason}); {where}.")
