"""The same command twice gives the same report: identical metrics and per-sample outcomes for
every registered perturbation kind (issue 13, determinism), on the shipped nano models."""

from __future__ import annotations

from pathlib import Path

import pytest

from robench.evaluation.request import EvalRequest, evaluate
from robench.perturbations import PERTURBATIONS

# One small entry per kind: seconds on CPU, every source of randomness exercised (random
# starts, SPSA's perturbation directions, Square's queries, corruption noise, word choice).
IMAGE_ENTRIES = {
    "clean": "",
    "fgsm": 'eps = "8/255"',
    "fgm": "eps = 1.0",
    "pgd": 'eps = "8/255"\nsteps = 3\nrandom_start = true',
    "spsa": 'eps = "8/255"\nsteps = 2\nnb_sample = 16\nmax_batch_size = 16',
    "autoattack": (
        'eps = "8/255"\nversion = "custom"\nattacks = ["apgd-ce", "square"]\nn_iter = 3\n'
        "n_queries = 20"
    ),
    "malt": 'eps = "8/255"\nn_target_classes = 2\nn_iter = 3',
    "corruption": 'corruption = "gaussian_noise"\nseverity = 3',
    "minimal-norm": 'eps = "8/255"\nsteps = 5',
    "randomized-smoothing": "sigma = 0.25\nn0 = 5\nn = 20\nbatch = 25",
    "smoothed-pgd": "eps = 0.25\nsigma = 0.25\nnoise_samples = 2\nsteps = 2\nn = 20\nbatch = 25",
}
TEXT_ENTRIES = {"clean": "", "word-swap": "rate = 0.05"}
# Text classifiers' attacks: random characters (DeepWordBug, Pruthi), WordNet (PWWS).
CLASSIFICATION_ENTRIES = {
    "deepwordbug": "query_budget = 50",
    "pruthi": "query_budget = 50",
    "pwws": "query_budget = 50",
}


# LRA sequences (robench/perturbations/sequences): which tokens, noise, patch place.
SEQUENCE_ENTRIES = {
    "token-substitution": "rate = 0.1",
    "pixel-noise": 'std = "16/255"',
    "pixel-occlusion": "size = 4",
}


def test_every_registered_kind_is_covered() -> None:
    covered = set(IMAGE_ENTRIES) | set(TEXT_ENTRIES) | set(CLASSIFICATION_ENTRIES)
    covered |= set(SEQUENCE_ENTRIES)
    # The torchattacks.* kinds: same seed, same images in tests/test_torchattacks_adapter.py.
    ours = {k for k in PERTURBATIONS.names() if not k.startswith("torchattacks.")}
    assert ours == covered


def _suite(tmp_path: Path, kind: str, body: str, task: str) -> Path:
    path = tmp_path / f"{kind}.toml"
    header = f'name = "det-{kind}"\nversion = 1\n'
    if task in ("text-classification", "sequence-classification"):
        header += f'task = "{task}"\n'
    if task == "language-modeling":
        header += (
            'task = "language-modeling"\nmetrics = ["perplexity"]\n'
            "[data_options]\ntarget_length = 32\n"
        )
    path.write_text(f'{header}\n[[perturbations]]\nkind = "{kind}"\n{body}\n')
    return path


def _twice(
    tmp_path: Path, suite: Path, model: str, data: str, limit: int, checkpoint: Path | None = None
) -> None:
    reports = [
        evaluate(
            EvalRequest(
                suite=str(suite),
                data=data,
                out=tmp_path / f"{suite.stem}-{run}.json",
                model=model,
                checkpoint=checkpoint,
                limit=limit,
                batch_size=8,
                seed=5,
            )
        )
        for run in ("a", "b")
    ]
    first, second = reports
    assert first.samples == second.samples  # every per-sample outcome, bit for bit
    assert [r.metrics for r in first.results] == [r.metrics for r in second.results]
    assert [r.params for r in first.results] == [r.params for r in second.results]
    assert first.seed == second.seed == 5


@pytest.mark.parametrize("kind", sorted(IMAGE_ENTRIES))
def test_image_kinds_are_deterministic(kind: str, tmp_path: Path, fashion_mnist_dir: Path) -> None:
    suite = _suite(tmp_path, kind, IMAGE_ENTRIES[kind], "image-classification")
    _twice(tmp_path, suite, "vit_nano_elliptical_fmnist", "fashion-mnist", limit=16)


@pytest.mark.parametrize("kind", sorted(TEXT_ENTRIES))
def test_text_kinds_are_deterministic(kind: str, tmp_path: Path) -> None:
    suite = _suite(tmp_path, kind, TEXT_ENTRIES[kind], "language-modeling")
    _twice(tmp_path, suite, "transformer_lm_nano_elliptical_pydocs", "pydoc-topics", limit=12)


@pytest.mark.parametrize("kind", sorted(CLASSIFICATION_ENTRIES))
def test_text_attack_kinds_are_deterministic(kind: str, tmp_path: Path) -> None:
    import text_classifier_fixture as fixture

    checkpoint = fixture.write_checkpoint(tmp_path / "bow.safetensors")
    data = fixture.write_sst2(tmp_path / "SST-2")
    suite = _suite(tmp_path, kind, CLASSIFICATION_ENTRIES[kind], "text-classification")
    _twice(tmp_path, suite, "bag_of_words_classifier", str(data), limit=16, checkpoint=checkpoint)


@pytest.mark.parametrize("kind", sorted(SEQUENCE_ENTRIES))
def test_sequence_kinds_are_deterministic(kind: str, tmp_path: Path) -> None:
    from robench.models.checkpoints import save_safetensors
    from robench.models.spec import ModelSpec, metadata_from_spec
    from robench.models.zoo.lm_registry import create_language_model
    from tests.lra_fixtures import write_listops, write_pathfinder_release

    # LRA data in the released layouts: ListOps TSVs, or Pathfinder images whose test split
    # (the last 10%) is 16 images of 32 x 32.
    if kind == "token-substitution":
        task, data = "listops", tmp_path / "listops"
        write_listops(data, rows=16)
        kwargs = {"vocab_size": 16, "num_classes": 10, "max_length": 512, "pad_id": 0}
    else:
        task, data = "pathfinder", tmp_path / "pathfinder"
        write_pathfinder_release(data, files=2, per_file=80)
        kwargs = {"vocab_size": 256, "num_classes": 2, "max_length": 1024, "pad_id": None}
    kwargs["lra_task"] = task
    model = create_language_model("lra_transformer_nano_elliptical", **kwargs)
    checkpoint = tmp_path / "lra.safetensors"
    spec = ModelSpec(architecture="lra_transformer_nano_elliptical", model_kwargs=kwargs)
    save_safetensors(model.state_dict(), checkpoint, metadata_from_spec(spec))
    suite = _suite(tmp_path, kind, SEQUENCE_ENTRIES[kind], "sequence-classification")
    model_name = "lra_transformer_nano_elliptical"
    _twice(tmp_path, suite, model_name, str(data), limit=16, checkpoint=checkpoint)
