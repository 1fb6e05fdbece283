"""Subword language models: a transformers folder scored per document by rolling windows."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from robench._core.errors import ConfigError, DataError
from robench.cli import app
from robench.data.text.documents import read_documents
from robench.data.text.rolling_windows import DocumentWindows, collate_documents, rolling_spans
from robench.models.sources.hf_causal_lm import build_causal_lm
from robench.tasks.language_modeling import score_documents

pytest.importorskip("transformers", reason="the optional extra robench[hf] (transformers)")

from tests.tiny_causal_lm import N_POSITIONS, build_tiny_causal_lm, write_documents


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"))


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("docs") / "docs.jsonl"
    write_documents(path)
    return path


@pytest.mark.parametrize("n_tokens", [1, 5, 32, 33, 64, 100])
def test_rolling_spans_score_every_token_once_within_the_context(n_tokens: int) -> None:
    spans = rolling_spans(n_tokens, 32)
    scored = [p for _, a, b in spans for p in range(a, b)]
    assert scored == list(range(1, n_tokens + 1))
    assert all(b - 1 - lo <= 32 for lo, _, b in spans)
    # The last window of a document longer than the context is filled to the full context.
    lo, _, b = spans[-1]
    assert b - 1 - lo == min(32, n_tokens)


def test_document_nll_equals_a_plain_forward_pass(folder: Path, docs: Path) -> None:
    parts = build_causal_lm(folder, trust_remote_code=False)
    dataset = DocumentWindows(read_documents(docs, "all"), parts.tokenizer, parts.max_length)
    inputs, targets = collate_documents([dataset[i] for i in range(len(dataset))])
    records = score_documents(parts.model, inputs, targets)
    text = dataset.corpus.texts[-1]  # the short one: one window, the prefix then its tokens
    ids = [parts.tokenizer.eos_token_id, *parts.tokenizer(text)["input_ids"]]
    assert len(ids) - 1 <= N_POSITIONS
    with torch.no_grad():
        logits = parts.model(torch.tensor([ids[:-1]]))[0]
    expected = -logits.log_softmax(-1)[range(len(ids) - 1), ids[1:]].double().sum()
    assert records["nll"][-1] == pytest.approx(float(expected), rel=1e-6)
    assert records["tokens"][-1] == len(ids) - 1
    assert records["words"][-1] == len(text.split()) + 1  # lm-eval's re.split counts the tail
    assert records["bytes"][-1] == len(text.encode("utf-8"))
    # A document longer than the context is scored in several windows, every token once.
    assert max(records["tokens"]) > N_POSITIONS
    assert sum(records["tokens"]) == dataset.n_tokens


def test_bad_folders_are_one_sentence_errors(folder: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    no_tokenizer = tmp_path / "no-tokenizer"
    no_tokenizer.mkdir()
    for name in ("config.json", "model.safetensors"):
        (no_tokenizer / name).write_bytes((folder / name).read_bytes())
    with pytest.raises(ConfigError, match="no tokenizer"):
        build_causal_lm(no_tokenizer, trust_remote_code=False)

    bigger = tmp_path / "bigger-tokenizer"
    bigger.mkdir()
    for name in ("config.json", "model.safetensors"):
        (bigger / name).write_bytes((folder / name).read_bytes())
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    tokenizer.add_tokens([f"extra{i}" for i in range(8)])
    tokenizer.save_pretrained(bigger)
    with pytest.raises(ConfigError, match="392 tokens but the model predicts only 384"):
        build_causal_lm(bigger, trust_remote_code=False)

    remote = tmp_path / "remote"
    remote.mkdir()
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="my_own_lm", auto_map={"AutoConfig": "modeling.MyConfig"})
    (remote / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match="--trust-remote-code"):
        build_causal_lm(remote, trust_remote_code=False)


def test_jsonl_records_and_txt_folders_are_documents(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    texts = write_documents(path, n=3, field="body")
    assert read_documents(path, "test", text_field="body").texts == tuple(texts)
    with pytest.raises(DataError, match=r"no string under 'text'.*--text-field"):
        read_documents(path, "test")
    folder = tmp_path / "txt"
    folder.mkdir()
    for i in range(30):
        (folder / f"doc{i:02}.txt").write_text(f"Document {i}.\nSecond line.\n")
    whole = read_documents(folder, "all")
    assert len(whole.texts) == 30 and whole.texts[3] == "Document 3.\nSecond line.\n"
    assert 0 < len(read_documents(folder, "test").texts) < 30  # the hashed split


def test_wikitext_articles_are_documents(tmp_path: Path) -> None:
    (tmp_path / "wiki.test.tokens").write_text(
        " \n = Alpha = \n \n Alpha is a letter . \n = = Use = = \n A @-@ b . \n"
        " = Beta = \n Beta follows . \n"
    )
    corpus = read_documents(tmp_path, "test")
    assert corpus.names == ("Alpha", "Beta")  # the blank line before joins the first
    assert corpus.texts[0].startswith(" \n = Alpha = \n")
    assert corpus.texts[-1] == " = Beta = \n Beta follows . \n"


def test_word_swap_edits_words_in_place_and_keeps_the_rest() -> None:
    from robench.perturbations.text.params import WordSwapParams
    from robench.perturbations.text.swaps import swap_lines

    corpus = read_documents("pydoc-topics", "test")
    lines, stats = swap_lines(corpus.lines, WordSwapParams(rate=0.2), seed=0)
    swapped = corpus.with_lines(lines)
    assert stats.swapped > 0
    for before, after in zip(corpus.texts, swapped.texts, strict=True):
        assert after.count("\n") == before.count("\n")
        assert len(after.split()) == len(before.split())  # lm-eval's word count is kept
    changed = sum(a != b for a, b in zip(corpus.texts, swapped.texts, strict=True))
    assert changed > 0 and "AAA" in "".join(swapped.texts)


def test_eval_cli_scores_documents_clean_and_swapped(folder: Path, docs: Path, tmp_path: Path):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app, ["eval", f"hf:{folder}", "-s", "text-smoke", "--data", str(docs), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["model"]["source"]["tokenizer_sha256"]
    by_name = {r["name"]: r for r in report["results"]}
    assert by_name["clean"]["n_samples"] == 5  # one sample per document
    assert by_name["word-swap-2.5"]["params"]["realised"]["realised_rate"] > 0
    clean_bpb = by_name["clean"]["metrics"]["bits_per_byte"]["value"]
    assert math.isfinite(clean_bpb) and clean_bpb > 0


@pytest.mark.slow
def test_shipped_bpe_model_is_small_and_word_swap_raises_its_perplexity(tmp_path: Path) -> None:
    import jsonschema

    from robench.cli._demo.bpe import bpe_model_folder, evaluate_bpe_demo
    from robench.results.report.schema import report_json_schema

    folder = bpe_model_folder()
    assert folder is not None, "models/gpt2_bpe_pydocs is missing"
    assert sum(p.stat().st_size for p in folder.iterdir()) < 5_000_000
    assert (folder / "model.safetensors").is_file() and (folder / "README.md").is_file()
    [(path, _)] = evaluate_bpe_demo(tmp_path, "text-smoke", quick=True, command=["test"])
    report = json.loads(path.read_text())
    jsonschema.validate(report, report_json_schema())
    bpb = {r["name"]: r["metrics"]["bits_per_byte"]["value"] for r in report["results"]}
    # Trained: well below the 8 bits of a uniform guess over bytes; swapping words hurts.
    assert bpb["clean"] < 4 and bpb["word-swap-2.5"] > bpb["clean"]


def test_word_level_models_read_jsonl_as_lines(tmp_path: Path) -> None:
    from robench.data.text import read_corpus, words_of

    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "One line.\\nTwo: lines"}\n\n{"text": "Three"}\n')
    corpus = read_corpus(path, "test")
    assert corpus.layout == "jsonl"
    assert corpus.lines == (tuple(words_of("One line.")), ("Two", ":", "lines"), ("Three",))


def test_demo_names_the_bpe_model_by_its_path_inside_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from robench.cli._demo.bpe import shown_folder

    folder = tmp_path / "models" / "gpt2_bpe_pydocs"
    folder.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert shown_folder(folder.resolve()) == Path("models/gpt2_bpe_pydocs")
    monkeypatch.chdir(folder)
    assert shown_folder(tmp_path / "models") == tmp_path / "models"  # outside: as it is
