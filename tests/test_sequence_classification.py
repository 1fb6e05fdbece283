"""The sequence-classification task (LRA) end to end, on files in the LRA release's layouts
(tests/lra_fixtures.py: ListOps TSVs, AAN retrieval pairs, Pathfinder images and metadata)
read by robench's readers, and nano LRA transformers nobody tuned: clean and perturbed top-1
recomputed from the per-sample predictions and the files' labels, the retrieval variant on
document pairs, the CLI and `robench.evaluate` agreeing, the Elliptical model differing from
the baseline in its final layer only, training, and bad input refused in one sentence with
nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import robench
from robench.cli import app
from robench.models.checkpoints import save_safetensors
from robench.models.loading import load_model
from robench.models.spec import ModelSpec, metadata_from_spec
from robench.models.zoo.lm_registry import create_language_model
from tests.lra_fixtures import write_aan, write_listops, write_pathfinder_release

TOKENS_KWARGS = {"vocab_size": 16, "num_classes": 10, "pad_id": 0, "lra_task": "listops"}
PAIR_KWARGS = {"vocab_size": 257, "num_classes": 2, "pad_id": 0, "pair": True, "max_length": 256}
PIXEL_KWARGS = {"vocab_size": 256, "num_classes": 2, "lra_task": "pathfinder", "max_length": 1024}
# ListOps token ids as docs/datasets.md gives them (0 is padding; parentheses are dropped),
# written out here rather than taken from the reader, so the test checks the reader too.
LISTOPS_IDS = {t: i for i, t in enumerate(["[MAX", "[MIN", "[MED", "[SM", "]", *"0123456789"], 1)}


def _checkpoint(path: Path, architecture: str, kwargs: dict[str, Any], seed: int = 0) -> Path:
    """A nano LRA model with random weights spread wide enough that predictions vary."""
    torch.manual_seed(seed)
    model = create_language_model(architecture, **{"max_length": 48, **kwargs})
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0, 0.3)
    spec = ModelSpec(architecture=architecture, model_kwargs={"max_length": 48, **kwargs})
    save_safetensors(model.state_dict(), path, metadata_from_spec(spec))
    return path


def _listops_ids(source: str) -> torch.Tensor:
    return torch.tensor([LISTOPS_IDS[t] for t in source.split() if t not in ("(", ")")])


def _long_listops(root: Path) -> Path:
    """ListOps whose test split ends with a 62-token expression, past the models' 48."""
    write_listops(root, seed=2, rows=8, max_tokens=48)
    long = "( [SM " + " ".join(str(i % 10) for i in range(60)) + " ] )"
    with (root / "basic_test.tsv").open("a") as handle:
        handle.write(f"{long}\t{sum(i % 10 for i in range(60)) % 10}\n")
    return root


@pytest.fixture(scope="module")
def lra(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("lra")
    # The test splits as the files hold them: (documents, label) per sample, token ids as
    # the layouts define them (ListOps' table above; AAN bytes + 1; Pathfinder grey levels).
    listops = write_listops(root / "listops", seed=1, rows=40, max_tokens=48)["test"]
    pairs = write_aan(root / "retrieval", seed=3, pairs_per_split=24)["test"]
    images = write_pathfinder_release(root / "pathfinder", files=3, per_file=80, seed=4)
    test_images = images[int(len(images) * 0.9) :]  # LRA's split: the last 10% is the test
    return {
        "listops": root / "listops",
        "long": _long_listops(root / "long"),
        "retrieval": root / "retrieval",
        "pathfinder": root / "pathfinder",
        "files": {
            "listops": ([[_listops_ids(s)] for s, _ in listops], [v for _, v in listops]),
            "retrieval": (
                [[torch.tensor(list(d)) + 1 for d in (a, b)] for _, a, b in pairs],
                [label for label, _, _ in pairs],
            ),
            "pathfinder": (
                [[torch.from_numpy(p).long().flatten()] for p, _ in test_images],
                [label for _, label in test_images],
            ),
        },
        "base": _checkpoint(root / "base.safetensors", "lra_transformer_nano", TOKENS_KWARGS),
        "ell": _checkpoint(
            root / "ell.safetensors", "lra_transformer_nano_elliptical", TOKENS_KWARGS
        ),
        "pair": _checkpoint(root / "pair.safetensors", "lra_transformer_nano", PAIR_KWARGS),
        "pixels": _checkpoint(root / "px.safetensors", "lra_transformer_nano", PIXEL_KWARGS),
        "root": root,
    }


def _eval(lra: Any, *args: str) -> Any:
    return CliRunner().invoke(app, ["eval", *args])


def _file(lra: Any, task: str) -> tuple[list[list[torch.Tensor]], list[int]]:
    """The test split's documents and labels, as the fixture wrote them."""
    docs, labels = lra["files"][task]
    return docs, labels


def _logits(checkpoint: Path, architecture: str, docs: list[list[torch.Tensor]]) -> torch.Tensor:
    """The model's own logits on the file's sequences, one at a time (no padding of ours)."""
    model = load_model(architecture, checkpoint=checkpoint).model
    with torch.no_grad():
        return torch.cat([model(_pair(d)[None] if len(d) == 2 else d[0][None]) for d in docs])


def _pair(docs: list[torch.Tensor]) -> torch.Tensor:
    """Two documents (2, L), the shorter padded with the layout's padding id 0."""
    return torch.nn.utils.rnn.pad_sequence(docs, batch_first=True, padding_value=0)


def _report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _tokens_report(lra: Any) -> Path:
    """The baseline's lra-tokens report on the ListOps file, by the CLI (made once)."""
    out = lra["root"] / "tokens.json"
    if not out.exists():
        args = ["lra_transformer_nano", "-c", str(lra["base"]), "-s", "lra-tokens"]
        result = _eval(lra, *args, "--data", str(lra["listops"]), "-o", str(out))
        assert result.exit_code == 0, result.output
    return out


def test_clean_and_substituted_top1_are_recomputed_from_predictions(lra: Any) -> None:
    report = _report(_tokens_report(lra))
    assert report["task"] == "sequence-classification"
    samples = report["samples"]["default"]
    docs, labels = _file(lra, "listops")
    assert samples["targets"] == [labels[i] for i in samples["indices"]]
    expected = _logits(lra["base"], "lra_transformer_nano", docs).argmax(1).tolist()
    clean = samples["values"]["clean"]["prediction"]
    assert clean == [expected[i] for i in samples["indices"]]
    for entry in report["results"]:
        predictions = samples["values"][entry["name"]]["prediction"]
        recomputed = np.mean([p == y for p, y in zip(predictions, samples["targets"], strict=True)])
        top1 = entry["metrics"]["top1"]
        assert top1["value"] == pytest.approx(recomputed)
        assert top1["ci95"][0] <= top1["value"] <= top1["ci95"][1]
    substituted = samples["values"]["substitution-10%"]["prediction"]
    assert substituted != clean  # 10% of the tokens changed moves some predictions


def test_the_python_api_agrees_with_the_cli_and_takes_sequences_in_memory(lra: Any) -> None:
    out = lra["root"] / "api.json"
    report = robench.evaluate(
        "lra_transformer_nano",
        "lra-smoke",
        str(lra["listops"]),
        checkpoint=lra["base"],
        out=out,
        progress=False,
    )
    cli = _report(_tokens_report(lra))
    clean = next(r for r in cli["results"] if r["name"] == "clean")
    assert report.results[0].metrics["top1"].value == pytest.approx(
        clean["metrics"]["top1"]["value"]
    )
    docs, labels = _file(lra, "listops")
    memory = [(d[0], y) for d, y in zip(docs, labels, strict=True)]
    again = robench.evaluate(
        "lra_transformer_nano",
        "lra-smoke",
        memory,
        checkpoint=lra["base"],
        out=lra["root"] / "memory.json",
        progress=False,
    )
    assert (
        again.samples["default"].values["clean"]["prediction"]
        == (report.samples["default"].values["clean"]["prediction"])
    )


def test_retrieval_pairs_are_encoded_with_shared_weights_and_scored(lra: Any) -> None:
    out = lra["root"] / "pairs.json"
    args = ["lra_transformer_nano", "-c", str(lra["pair"]), "-s", "lra-tokens", "--lra-task"]
    result = _eval(lra, *args, "retrieval", "--data", str(lra["retrieval"]), "-o", str(out))
    assert result.exit_code == 0, result.output
    samples = _report(out)["samples"]["default"]
    docs, labels = _file(lra, "retrieval")
    assert samples["targets"] == [labels[i] for i in samples["indices"]]
    expected = _logits(lra["pair"], "lra_transformer_nano", docs).argmax(1).tolist()
    assert samples["values"]["clean"]["prediction"] == [expected[i] for i in samples["indices"]]
    model = load_model("lra_transformer_nano", checkpoint=lra["pair"]).model
    u, v = _pair(docs[0])
    with torch.no_grad():
        swapped = model(torch.stack([v, u])[None]), model(torch.stack([u, v])[None])
        # [u, v, u * v, u - v]: one encoder for both documents, the head sees their order
        encoded = model.encode(torch.stack([u, v]))
        features = torch.cat(
            [encoded[0], encoded[1], encoded[0] * encoded[1], encoded[0] - encoded[1]]
        )
        assert torch.allclose(model.head(features[None]), swapped[1], atol=1e-5)
    assert not torch.allclose(*swapped)


def test_pixel_suite_runs_noise_and_occlusion_on_pathfinder(lra: Any) -> None:
    out = lra["root"] / "pixels.json"
    args = ["lra_transformer_nano", "-c", str(lra["pixels"]), "-s", "lra-pixels"]
    result = _eval(lra, *args, "--data", str(lra["pathfinder"]), "-o", str(out))
    assert result.exit_code == 0, result.output
    report = _report(out)
    names = [r["name"] for r in report["results"]]
    assert names == ["clean", "noise-8/255", "noise-32/255", "occlusion-4", "occlusion-8"]
    assert report["datasets"]["default"]["kind"] == "lra-pathfinder"
    samples = report["samples"]["default"]
    docs, labels = _file(lra, "pathfinder")  # the metadata's labels of the last 10%
    assert samples["targets"] == [labels[i] for i in samples["indices"]]
    expected = _logits(lra["pixels"], "lra_transformer_nano", docs).argmax(1).tolist()
    assert samples["values"]["clean"]["prediction"] == [expected[i] for i in samples["indices"]]
    for entry in report["results"]:
        predictions = samples["values"][entry["name"]]["prediction"]
        recomputed = np.mean([p == y for p, y in zip(predictions, samples["targets"], strict=True)])
        assert entry["metrics"]["top1"]["value"] == pytest.approx(recomputed)


def test_the_elliptical_model_differs_from_the_baseline_in_its_final_layer_only(
    lra: Any,
) -> None:
    base = create_language_model("lra_transformer_nano", **TOKENS_KWARGS)
    ell = create_language_model("lra_transformer_nano_elliptical", **TOKENS_KWARGS)
    ell.load_state_dict(base.state_dict(), strict=True)  # same parameters, same keys
    with torch.no_grad():
        for parameter in ell.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.3)
    base.load_state_dict(ell.state_dict())
    base.eval(), ell.eval()
    outputs: dict[str, list[torch.Tensor]] = {"base": [], "ell": []}
    for name, model in (("base", base), ("ell", ell)):
        for block in model.blocks:
            block.register_forward_hook(lambda _m, _i, out, n=name: outputs[n].append(out))
    tokens = torch.randint(1, 16, (4, 30))
    with torch.no_grad():
        logits = base(tokens), ell(tokens)
    assert torch.equal(outputs["base"][0], outputs["ell"][0])  # the first layer: standard
    assert not torch.allclose(outputs["base"][1], outputs["ell"][1])  # the final: elliptical
    assert not torch.allclose(*logits)
    kinds = [type(block.attn).__name__ for block in ell.blocks]
    assert kinds == ["EllipticalAttention", "EllipticalAttention"]
    assert [block.attn.is_first for block in ell.blocks] == [True, False]
    deeper = create_language_model("lra_transformer_elliptical", 16, depth=4)
    using = [not getattr(b.attn, "is_first", True) for b in deeper.blocks]
    assert using == [False, False, False, True]  # Elliptical Attention on the final layer only


def test_training_writes_a_checkpoint_that_evaluates_without_naming_the_task(
    lra: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    write_listops(data, seed=5, rows=32, max_tokens=30)
    # A validation expression longer than every training one (34 tokens): the model must
    # read it too, or validation would be refused after training started.
    with (data / "basic_val.tsv").open("a") as handle:
        handle.write("( [MAX " + " ".join(str(i % 10) for i in range(32)) + " ] )\t9\n")
    args = ["train", "lra_transformer_nano_elliptical", "--data", str(data), "--lra-task"]
    args += [
        "listops",
        "--max-steps",
        "4",
        "-b",
        "8",
        "--val-every",
        "2",
        "-o",
        str(tmp_path / "r"),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "best validation top-1" in result.stdout
    best = tmp_path / "r" / "best.safetensors"
    loaded = load_model("lra_transformer_nano_elliptical", checkpoint=best)
    # Sized by the data: the longest training or validation expression.
    assert loaded.model.lra_task == "listops" and loaded.model.max_length == 34
    out = tmp_path / "eval.json"
    result = _eval(lra, "lra_transformer_nano_elliptical", "-c", str(best), "-s", "lra-smoke",
                   "--data", str(data), "--split", "train", "-o", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert _report(out)["model"]["extensions"]["elliptical"]["layers"] == 1


def _refused(result: Any, out: Path, fragment: str) -> None:
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not out.exists() and not list(out.parent.glob(f"{out.stem}*"))


def test_a_sequence_longer_than_the_model_reads_is_refused(lra: Any, tmp_path: Path) -> None:
    out = tmp_path / "long.json"
    args = ["lra_transformer_nano", "-c", str(lra["base"]), "-s", "lra-smoke"]
    result = _eval(lra, *args, "--data", str(lra["long"]), "-o", str(out))
    _refused(result, out, "reads at most 48")


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ('kind = "pixel-noise"\nstd = "8/255"', "edits image, pathfinder data"),
        ('kind = "token-substitution"\nrate = 0', "rate"),
        ('kind = "token-substitution"\nrate = 1.5', "rate"),
        ('kind = "pixel-noise"\nstd = 0', "std"),
        ('kind = "pixel-noise"\nstd = 2', "std"),
        ('kind = "pixel-occlusion"\nsize = 0', "size"),
    ],
)
def test_bad_perturbations_are_refused(lra: Any, tmp_path: Path, entry: str, fragment: str) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text(
        'name = "bad"\nversion = 1\ntask = "sequence-classification"\n'
        f'[[perturbations]]\nkind = "clean"\n[[perturbations]]\n{entry}\n'
    )
    out = tmp_path / "bad.json"
    args = ["lra_transformer_nano", "-c", str(lra["base"]), "-s", str(suite)]
    _refused(_eval(lra, *args, "--data", str(lra["listops"]), "-o", str(out)), out, fragment)


def test_occlusion_larger_than_the_image_and_an_unknown_task_are_refused(
    lra: Any, tmp_path: Path
) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text(
        'name = "big"\nversion = 1\ntask = "sequence-classification"\n'
        '[[perturbations]]\nkind = "pixel-occlusion"\nsize = 33\n'
    )
    out = tmp_path / "big.json"
    args = ["lra_transformer_nano", "-c", str(lra["pixels"]), "-s", str(suite)]
    result = _eval(lra, *args, "--data", str(lra["pathfinder"]), "-o", str(out))
    _refused(result, out, "exceeds the data's 32 x 32 images")
    args = ["lra_transformer_nano", "-c", str(lra["base"]), "-s", "lra-smoke", "--lra-task"]
    result = _eval(lra, *args, "sudoku", "--data", str(lra["listops"]), "-o", str(out))
    _refused(result, out, "is not an LRA task")


def test_the_gate_pairs_two_models_per_sequence(lra: Any) -> None:
    out = lra["root"] / "ell-tokens.json"
    args = ["lra_transformer_nano_elliptical", "-c", str(lra["ell"]), "-s", "lra-tokens"]
    assert _eval(lra, *args, "--data", str(lra["listops"]), "-o", str(out)).exit_code == 0
    base_path = _tokens_report(lra)
    gate_json = lra["root"] / "gate.json"
    gate = ["gate", "-b", str(base_path), "-c", str(out), "--json", str(gate_json)]
    result = CliRunner().invoke(app, gate)
    assert result.exit_code in (0, 1), result.output
    checks = {c["name"]: c for c in json.loads(gate_json.read_text())["checks"]}
    base, ell = _report(base_path)["samples"]["default"], _report(out)["samples"]["default"]
    for name in ("clean", "substitution-1%", "substitution-5%", "substitution-10%"):
        right_b = _correct(base, name)
        right_e = _correct(ell, name)
        lost = sum(b and not e for b, e in zip(right_b, right_e, strict=True))
        won = sum(e and not b for b, e in zip(right_b, right_e, strict=True))
        assert checks[f"{name}/top1"]["test"] == f"exact McNemar (b={lost}, c={won})"


def _correct(samples: dict[str, Any], name: str) -> list[bool]:
    predictions = samples["values"][name]["prediction"]
    return [p == y for p, y in zip(predictions, samples["targets"], strict=True)]


def test_a_module_in_memory_is_evaluated_on_its_own_task(tmp_path: Path) -> None:
    """An LRA model object (no checkpoint) on pairs held in memory: scored as loaded."""
    torch.manual_seed(0)
    model = create_language_model("lra_transformer_nano", **{**PAIR_KWARGS, "max_length": 32})
    pairs = [(torch.randint(1, 64, (2, 20)), i % 2) for i in range(12)]
    report = robench.evaluate(
        model, data=pairs, out=tmp_path / "r.json", progress=False, allow_random_weights=True
    )
    assert report.task == "sequence-classification" and report.suite.name == "lra-smoke"
    with torch.no_grad():
        expected = model.eval()(torch.stack([p for p, _ in pairs])).argmax(1).tolist()
    samples = report.samples["default"]
    assert samples.values["clean"]["prediction"] == [expected[i] for i in samples.indices]
