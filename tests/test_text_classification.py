"""The text-classification task end to end, on an SST-2 file written here and a bag-of-words
classifier nobody tuned (tests/text_classifier_fixture.py): clean accuracy from the
per-sample predictions and the file's labels, attacks whose successes are misclassified and
within their recipe's constraints, success rates from the per-sample categories, the same
outcomes at any batch size, and bad input refused in one sentence with nothing written."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import text_classifier_fixture as fixture
import torch
from typer.testing import CliRunner

from robench.cli import app
from robench.data.text.text_rows import decode_rows, encode_rows
from robench.evaluation.request import EvalRequest, evaluate
from robench.models.loading import load_model
from robench.perturbations.text.attack_constraints import AttackConstraints
from robench.perturbations.text.attack_params import DeepWordBugParams, PruthiParams
from robench.perturbations.text.greedy_search import run_searches
from robench.perturbations.text.recipes import RECIPES

SUITE = """
name = "text-attacks-test"
version = 1
task = "text-classification"
description = "clean, DeepWordBug and Pruthi"
[[perturbations]]
kind = "clean"
[[perturbations]]
kind = "deepwordbug"
query_budget = 60
[[perturbations]]
kind = "pruthi"
"""
MODEL = "bag_of_words_classifier"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("text")
    suite = root / "suite.toml"
    suite.write_text(SUITE)
    return {
        "checkpoint": fixture.write_checkpoint(root / "bow.safetensors"),
        "data": fixture.write_sst2(root / "SST-2"),
        "suite": suite,
        "root": root,
    }


def _evaluate(files: dict[str, Path], batch_size: int, name: str):
    request = EvalRequest(
        suite=str(files["suite"]),
        data=str(files["data"]),
        out=files["root"] / f"{name}.json",
        model=MODEL,
        checkpoint=files["checkpoint"],
        batch_size=batch_size,
    )
    return evaluate(request)


@pytest.fixture(scope="module")
def report(files: dict[str, Path]):
    return _evaluate(files, 16, "whole")


def _model(files: dict[str, Path]) -> torch.nn.Module:
    return load_model(MODEL, checkpoint=files["checkpoint"]).model


def test_clean_accuracy_is_recomputed_from_predictions_and_the_files_labels(
    report, files: dict[str, Path]
) -> None:
    lines = (files["data"] / "dev.tsv").read_text().splitlines()[1:]
    labels = [int(line.split("\t")[1]) for line in lines]
    samples = report.samples["default"]
    assert samples.targets == [labels[i] for i in samples.indices]
    predictions = samples.values["clean"]["prediction"]
    recomputed = np.mean([p == y for p, y in zip(predictions, samples.targets, strict=True)])
    clean = next(r for r in report.results if r.name == "clean")
    assert clean.metrics["top1"].value == pytest.approx(recomputed)
    # ... and the predictions are the model's own on the file's sentences
    texts = [line.split("\t")[0] for line in lines]
    with torch.no_grad():
        logits = _model(files)(encode_rows([texts[i] for i in samples.indices]))
    assert predictions == logits.argmax(dim=1).tolist()
    assert "attack_success_rate" not in clean.metrics  # nothing was attacked


@pytest.mark.parametrize("attack", ["deepwordbug", "pruthi"])
def test_successes_are_misclassified_and_within_the_recipes_constraints(
    report, files: dict[str, Path], attack: str
) -> None:
    samples = report.samples["default"]
    columns = samples.values[attack]
    texts = [
        line.split("\t")[0] for line in (files["data"] / "dev.tsv").read_text().splitlines()[1:]
    ]
    params = {"deepwordbug": DeepWordBugParams(), "pruthi": PruthiParams()}[attack]
    constraints = AttackConstraints(**params.constraint_options())  # type: ignore[arg-type]
    won = [i for i, o in enumerate(columns["outcome"]) if o == "succeeded"]
    assert won, "the attack should fool a bag of words on some sentences"
    model = _model(files)
    with torch.no_grad():
        predicted = model(encode_rows([columns["text"][i] for i in won])).argmax(dim=1).tolist()
    for i, prediction in zip(won, predicted, strict=True):
        original, attacked = texts[samples.indices[i]], columns["text"][i]
        assert attacked != original
        assert constraints.violation(original, attacked) is None
        assert prediction != samples.targets[i] == columns["prediction"][i] or (
            prediction == columns["prediction"][i] != samples.targets[i]
        )
        assert 0 < columns["changed_words"][i] <= columns["words"][i]
    for i, outcome in enumerate(columns["outcome"]):
        correct_clean = samples.values["clean"]["prediction"][i] == samples.targets[i]
        assert (outcome == "skipped") == (not correct_clean)
        if outcome == "skipped":
            assert columns["queries"][i] == 1 and columns["text"][i] == texts[samples.indices[i]]


@pytest.mark.parametrize("attack", ["deepwordbug", "pruthi"])
def test_success_rate_and_queries_are_recomputed_from_the_categories(report, attack: str) -> None:
    columns = report.samples["default"].values[attack]
    outcomes, queries = columns["outcome"], columns["queries"]
    attacked = [i for i, o in enumerate(outcomes) if o != "skipped"]
    result = next(r for r in report.results if r.name == attack).metrics
    assert result["attack_success_rate"].value == pytest.approx(
        sum(outcomes[i] == "succeeded" for i in attacked) / len(attacked)
    )
    assert result["queries_mean"].value == pytest.approx(np.mean([queries[i] for i in attacked]))
    assert result["queries_median"].value == pytest.approx(
        np.median([queries[i] for i in attacked])
    )
    low, high = result["attack_success_rate"].ci95
    assert low <= result["attack_success_rate"].value <= high
    # top-1 under attack: the samples neither skipped nor fooled
    assert result["top1"].value == pytest.approx(
        sum(o == "failed" for o in outcomes) / len(outcomes)
    )
    assert max(queries) <= (60 if attack == "deepwordbug" else max(queries))


def test_outcomes_do_not_depend_on_the_batch_size(report, files: dict[str, Path]) -> None:
    one_by_one = _evaluate(files, 1, "one")
    for attack in ("deepwordbug", "pruthi"):
        for column in ("outcome", "queries", "text", "prediction"):
            assert (
                one_by_one.samples["default"].values[attack][column]
                == report.samples["default"].values[attack][column]
            )


def test_searches_run_together_equal_searches_run_alone(files: dict[str, Path]) -> None:
    model = _model(files)

    def score(texts):
        with torch.no_grad():
            return model(encode_rows(list(texts))).double().softmax(dim=1).numpy()

    constraints = AttackConstraints(max_edit_distance=30)
    recipe = RECIPES["deepwordbug"]
    sentences = fixture.SENTENCES[:8]

    def searches():
        return [recipe.start(t, y, constraints, 7 + i, None) for i, (t, y) in enumerate(sentences)]

    together = run_searches(searches(), score)
    alone = [run_searches([s], score)[0] for s in searches()]
    assert together == alone


def test_text_rows_round_trip() -> None:
    texts = ["", "naïve café", "a\tb", "x" * 300]
    assert decode_rows(encode_rows(texts)) == texts
    rng = random.Random(0)
    assert decode_rows(encode_rows([chr(rng.randrange(32, 0x2000)) * 3])) != [""]


def _cli(files: dict[str, Path], out: Path, *extra: str, suite: str | None = None) -> object:
    """`robench eval` in this process (the fixture's import registered the classifier)."""
    args = ["eval", MODEL, "-c", str(files["checkpoint"]), "--suite", suite or str(files["suite"])]
    return CliRunner().invoke(app, [*args, "-o", str(out), *extra])


def _refused(result, out: Path, *words: str) -> None:
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "Traceback" not in result.output
    for word in words:
        assert word in text, text
    assert not out.exists() and not list(out.parent.glob(out.stem + "*"))


def test_bad_input_is_one_sentence_and_nothing_is_written(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r.json"
    unlabeled = tmp_path / "unlabeled"
    unlabeled.mkdir()
    (unlabeled / "test.tsv").write_text("index\tsentence\n0\ta good film\n")
    _refused(
        _cli(files, out, "--data", str(unlabeled), "--split", "test"),
        out,
        "no labels",
    )
    three = tmp_path / "three.csv"
    three.write_text("text,label\na good film,0\nbad,2\n")
    _refused(_cli(files, out, "--data", str(three)), out, "labels up to 2", "2 classes")
    _refused(
        _cli(files, out, "--data", str(files["data"]), "--text-field", "review"), out, "review"
    )
    image_suite = tmp_path / "image.toml"
    image_suite.write_text(SUITE.replace('task = "text-classification"\n', ""))
    _refused(
        _cli(files, out, "--data", str(files["data"]), suite=str(image_suite)), out, "deepwordbug"
    )
    pwws = tmp_path / "pwws.toml"
    pwws.write_text(
        SUITE.split('[[perturbations]]\nkind = "deepwordbug"')[0]
        + '[[perturbations]]\nkind = "pwws"\n'
    )
    monkeypatch.setenv("ROBENCH_WORDNET_DIR", str(tmp_path / "no-wordnet"))
    _refused(
        _cli(files, out, "--data", str(files["data"]), suite=str(pwws)), out, "apt-get install"
    )


def test_a_metric_no_sample_defines_is_left_out_and_the_report_reads_back(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """No word is long enough for Pruthi: every attacked sample fails, so there is no
    perturbed-word share to report; the report still reads back and compares."""
    import json

    from robench.results.report.schema import Report

    suite = tmp_path / "none.toml"
    suite.write_text(
        'name = "none"\nversion = 1\ntask = "text-classification"\n'
        '[[perturbations]]\nkind = "pruthi"\nmin_word_length = 30\n'
    )
    out = tmp_path / "none.json"
    result = _cli(files, out, "--data", str(files["data"]), suite=str(suite))
    assert result.exit_code == 0, result.output
    report = Report.model_validate(json.loads(out.read_text()))
    metrics = report.results[0].metrics
    assert metrics["attack_success_rate"].value == 0.0
    assert "perturbed_word_share" not in metrics
    compared = CliRunner().invoke(app, ["compare", str(out), str(out)])
    assert compared.exit_code == 0, compared.output
