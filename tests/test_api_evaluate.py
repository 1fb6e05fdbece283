"""`robench.evaluate(model, suite, data)` on models and data held in memory (issue 40, items
1, 2 and 6): the same per-sample records as `robench eval` on the same weights, for every
task and with an attack in each; the caller's model left as it was; bad input as one
sentence (a ValueError) with nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

import robench
from robench._core.errors import ConfigError
from robench.cli import app
from robench.results.report.schema import Report

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


def cli_eval(args: list[str], out: Path) -> Report:
    """`robench eval ARGS -o OUT` through the command line; its report."""
    result = CliRunner().invoke(app, ["eval", *args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return Report.model_validate(json.loads(out.read_text()))


def assert_same_records(cli: Report, api: Report) -> None:
    """Every dataset's indices, targets and per-sample columns, and every result's metrics,
    as the report's JSON holds them."""
    ours, theirs = api.model_dump(mode="json"), cli.model_dump(mode="json")
    assert set(ours["samples"]) == set(theirs["samples"])
    for name, samples in theirs["samples"].items():
        for key in ("indices", "targets", "values"):
            assert ours["samples"][name][key] == samples[key], (name, key)
    assert [r["name"] for r in ours["results"]] == [r["name"] for r in theirs["results"]]
    for mine, cli_result in zip(ours["results"], theirs["results"], strict=True):
        assert mine["metrics"] == cli_result["metrics"], mine["name"]
        assert mine["params"] == cli_result["params"], mine["name"]


def shipped_weights(name: str) -> dict[str, torch.Tensor]:
    from robench.models.checkpoints import read_checkpoint

    return dict(read_checkpoint(MODELS / f"{name}.safetensors").state_dict)


def write_suite(path: Path, task: str, entries: str) -> Path:
    path.write_text(f'name = "t"\nversion = 1\ntask = "{task}"\n{entries}')
    return path


# --- item 2: the CLI's numbers, per task, with an attack in each ---------------------------


def test_timm_image_classifier_in_memory_equals_cli(tmp_path: Path) -> None:
    import timm

    import robench.models.zoo

    model = timm.create_model("vit_nano_patch4_28")
    model.load_state_dict(shipped_weights("vit_nano_fmnist"))
    api = robench.evaluate(model, "smoke", limit=8, batch_size=4, progress=False)
    args = ["vit_nano_fmnist", "-s", "smoke", "--limit", "8", "-b", "4"]
    cli = cli_eval(args, tmp_path / "r.json")
    assert_same_records(cli, api)
    assert {r.name for r in api.results} == {"clean", "fgsm", "pgd-5"}
    assert api.model.source is not None and api.model.source["source"] == "memory"
    assert api.model.n_parameters == cli.model.n_parameters


def test_timm_resnet_built_in_memory_on_tensors_equals_cli_on_its_checkpoint(
    tmp_path: Path,
) -> None:
    """A timm architecture robench does not ship, random weights, Fashion-MNIST as tensors
    (x, y) against the CLI on the built-in data, its checkpoint and the same preprocessing."""
    import timm

    from robench.data import Preprocessing, open_dataset
    from robench.models.checkpoints import save_safetensors

    torch.manual_seed(0)
    model = timm.create_model("resnet18", num_classes=10, in_chans=1)
    checkpoint = tmp_path / "resnet.safetensors"
    save_safetensors(model.state_dict(), checkpoint, {})
    test_split = open_dataset("fashion-mnist", preprocessing=Preprocessing((1, 28, 28)))
    x = torch.from_numpy(test_split.images).unsqueeze(1).float() / 255.0  # (10000, 1, 28, 28)
    y = torch.tensor(test_split.targets)
    prep = {"mean": (0.286,), "std": (0.353,), "size": (1, 28, 28), "crop_pct": 1.0}
    entries = '[[perturbations]]\nkind = "clean"\n[[perturbations]]\nkind = "fgsm"\neps = "8/255"\n'
    suite = str(write_suite(tmp_path / "s.toml", "image-classification", entries))
    api = robench.evaluate(
        model, suite, (x, y), preprocessing=prep, limit=6, batch_size=6, progress=False
    )
    flags = ["--mean", "0.286", "--std", "0.353", "--input-size", "1,28,28", "--crop-pct", "1"]
    kwargs = ["--num-classes", "10", "--model-kwargs", '{"in_chans": 1}']
    args = ["resnet18", "-c", str(checkpoint), "-s", suite, *flags, *kwargs]
    cli = cli_eval([*args, "--limit", "6", "-b", "6"], tmp_path / "r.json")
    assert_same_records(cli, api)


def test_segmenter_in_memory_on_a_dataset_of_image_mask_pairs_equals_cli(tmp_path: Path) -> None:
    import timm

    import robench.models.zoo
    from robench.data.segmentation.scenes import FashionScenes

    model = timm.create_model("segmenter_nano_elliptical")
    model.load_state_dict(shipped_weights("segmenter_nano_elliptical_scenes"))
    entries = '[[perturbations]]\nkind = "clean"\n[[perturbations]]\nkind = "pgd"\n'
    entries += 'eps = "2/255"\nsteps = 2\nstep_size = "1/255"\n'
    suite = write_suite(tmp_path / "seg.toml", "semantic-segmentation", entries)
    scenes = FashionScenes(split="test")  # a torch Dataset of (image, label map) items
    api = robench.evaluate(model, str(suite), scenes, limit=4, batch_size=4, progress=False)
    args = ["segmenter_nano_elliptical_scenes", "-s", str(suite), "--limit", "4", "-b", "4"]
    cli = cli_eval(args, tmp_path / "r.json")
    assert api.task == "semantic-segmentation"
    assert_same_records(cli, api)


@pytest.fixture(scope="module")
def causal_lm() -> tuple[Any, Any]:
    """A transformers GPT-2 built in memory with its own BPE tokenizer (random weights)."""
    pytest.importorskip("transformers")
    from robench.data.text.documents import read_documents
    from robench.training.train_hf_lm import tiny_gpt2, train_bpe_tokenizer

    tokenizer = train_bpe_tokenizer(list(read_documents("pydoc-topics", "train").texts)[:20], 384)
    torch.manual_seed(0)
    model = tiny_gpt2(tokenizer, n_positions=32, n_embd=32, n_layer=2, n_head=2)
    return model, tokenizer


def test_transformers_causal_lm_on_texts_equals_cli_on_its_folder(
    causal_lm: tuple[Any, Any], tmp_path: Path
) -> None:
    from robench.data.text.documents import read_documents

    model, tokenizer = causal_lm
    folder = tmp_path / "gpt2"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    texts = [text[:200] for text in list(read_documents("pydoc-topics", "test").texts)[:6]]
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    api = robench.evaluate(
        model, "text-smoke", texts, tokenizer=tokenizer, limit=4, batch_size=2, progress=False
    )
    args = [f"hf:{folder}", "-s", "text-smoke", "--data", str(docs), "--limit", "4", "-b", "2"]
    cli = cli_eval(args, tmp_path / "r.json")
    assert api.task == "language-modeling"
    assert_same_records(cli, api)
    assert {r.kind for r in api.results} == {"clean", "word-swap"}


@pytest.fixture(scope="module")
def bert() -> tuple[Any, Any]:
    """A 2-layer BERT sequence classifier built in memory, word-level tokenizer."""
    pytest.importorskip("transformers")
    import text_classifier_fixture as fixture
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *fixture.vocabulary().words[2:]]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]",
    )  # fmt: skip
    config = BertConfig(
        vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, num_labels=2,
        id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1},
    )  # fmt: skip
    torch.manual_seed(0)
    return BertForSequenceClassification(config).eval(), tokenizer


def test_transformers_text_classifier_on_pairs_equals_cli_on_its_folder(
    bert: tuple[Any, Any], tmp_path: Path
) -> None:
    import text_classifier_fixture as fixture

    model, tokenizer = bert
    folder = tmp_path / "bert"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    data = fixture.write_sst2(tmp_path / "SST-2")
    pairs = list(fixture.SENTENCES)
    api = robench.evaluate(
        model,
        "text-classification-smoke",
        pairs,
        tokenizer=tokenizer,
        limit=6,
        batch_size=3,
        progress=False,
    )
    args = [f"hf:{folder}", "-s", "text-classification-smoke", "--data", str(data)]
    cli = cli_eval([*args, "--limit", "6", "-b", "3"], tmp_path / "r.json")
    assert api.task == "text-classification"
    assert_same_records(cli, api)
    assert {"deepwordbug", "pruthi"} <= {r.kind for r in api.results}


# --- item 1: provenance, the caller's model, what is written --------------------------------


class SmallNet(nn.Module):
    """A small CNN for Fashion-MNIST pixels in [0, 1] (1, 28, 28) -> 10 logits."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, 2), nn.BatchNorm2d(4), nn.ReLU())
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(4 * 13 * 13, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(self.features(x).flatten(1)))


CLEAN_FGSM = [{"kind": "clean"}, {"kind": "fgsm", "eps": "2/255"}]


def _tensors(n: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return torch.rand(n, 1, 28, 28, generator=generator), torch.arange(n) % 10


def test_weights_hash_names_the_weights_and_the_caller_labels_the_model() -> None:
    torch.manual_seed(0)
    model = SmallNet()
    first = robench.evaluate(model, CLEAN_FGSM, _tensors(), model_name="mine", progress=False)
    again = robench.evaluate(model, CLEAN_FGSM, _tensors(), model_name="mine", progress=False)
    with torch.no_grad():
        model.head.bias[0] += 1e-3
    changed = robench.evaluate(model, CLEAN_FGSM, _tensors(), progress=False)
    assert first.model.checkpoint_sha256 == again.model.checkpoint_sha256
    assert changed.model.checkpoint_sha256 != first.model.checkpoint_sha256
    assert first.model.name == "mine" and changed.model.name == "SmallNet"
    assert first.model.architecture.endswith("SmallNet")
    assert first.model.source is not None
    assert first.model.source["n_parameters"] == sum(p.numel() for p in model.parameters())
    assert first.model.source["model_name"] == "mine"
    assert first.suite.name == "python" and first.datasets["default"].kind == "in-memory"


def test_the_callers_model_is_left_as_it_was_also_after_an_error() -> None:
    torch.manual_seed(0)
    model = SmallNet().train()
    model.features[1].eval()  # a frozen BatchNorm inside a training model
    model.head.weight.requires_grad_(False)
    calls: list[int] = []
    handle = model.register_forward_hook(lambda *_: calls.append(1))
    model(torch.rand(2, 1, 28, 28)).sum().backward()
    grad = model.features[0].weight.grad.clone()
    stats = model.features[1].running_mean.clone()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    torch.manual_seed(123)
    expected_draw = torch.rand(3)
    torch.manual_seed(123)
    robench.evaluate(model, CLEAN_FGSM, _tensors(), progress=False)
    assert torch.equal(torch.rand(3), expected_draw)  # the caller's random stream goes on
    assert model.training and model.drop.training and not model.features[1].training
    assert not model.head.weight.requires_grad and model.head.bias.requires_grad
    assert torch.equal(model.features[0].weight.grad, grad)
    assert torch.equal(model.features[1].running_mean, stats)
    for name, p in model.named_parameters():
        assert torch.equal(p, before[name]), name
    calls.clear()
    model(torch.rand(1, 1, 28, 28))
    assert calls == [1]  # the caller's hook is still there, and only it
    with pytest.raises(ValueError):
        robench.evaluate(model, [{"kind": "fgsm", "eps": 2.0}], _tensors(), progress=False)
    assert model.training and not model.features[1].training
    handle.remove()


def test_nothing_is_written_without_out_and_out_writes_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.chdir(tmp_path)
    report = robench.evaluate(SmallNet(), CLEAN_FGSM, _tensors(), progress=False)
    assert report.results and sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]
    assert list(scratch.iterdir()) == []
    out = tmp_path / "out" / "report.json"
    saved = robench.evaluate(SmallNet(), CLEAN_FGSM, _tensors(), out=out, progress=False)
    assert Report.model_validate(json.loads(out.read_text())).results == saved.results
    assert out.with_name("report.samples.jsonl").is_file()


def test_a_suite_of_the_toml_shape_and_a_dataloader_of_pairs() -> None:
    from torch.utils.data import DataLoader, TensorDataset

    suite = {"name": "mine", "version": 2, "perturbations": CLEAN_FGSM}
    loader = DataLoader(TensorDataset(*_tensors(12)), batch_size=5)
    report = robench.evaluate(SmallNet(), suite, loader, batch_size=4, progress=False)
    assert report.suite.name == "mine" and report.suite.version == 2
    assert report.datasets["default"].n_samples == 12
    assert robench.evaluate is robench.api.evaluate


@pytest.mark.parametrize(("limit", "channels_last"), [(None, False), (7, False), (None, True)])
def test_float_tensors_cut_in_batches_give_the_records_of_item_by_item_loading(
    limit: int | None, channels_last: bool
) -> None:
    """(x, y) of float32 images at the input size are batched by slicing the tensor (in order
    without --limit, by index with its random subset); the same items given as a list of
    pairs go through the DataLoader one by one: the records are the same, also for a caller's
    channels-last tensor (whose slices would reach the convolution in another memory format)."""
    from robench.data.in_memory import InMemory, InMemoryImages

    x, y = _tensors(16)
    given = x.to(memory_format=torch.channels_last) if channels_last else x
    # A model of mine whose inputs are tensors of this shape takes the fast path.
    assert (
        InMemoryImages(
            InMemory(torch.utils.data.TensorDataset(given, y), name="t", targets=y.tolist()),
            robench.data.Preprocessing((1, 28, 28)),
            [str(c) for c in range(10)],
        ).stacked_batch
        is not None
    )
    torch.manual_seed(0)
    model = SmallNet()
    runs = [
        robench.evaluate(model, CLEAN_FGSM, data, limit=limit, batch_size=5, seed=3, progress=False)
        for data in ((given, y), list(zip(x, y.tolist(), strict=True)))
    ]
    fast, items = (run.model_dump(mode="json") for run in runs)
    assert fast["samples"]["default"]["indices"] == items["samples"]["default"]["indices"]
    assert fast["samples"]["default"]["values"] == items["samples"]["default"]["values"]
    assert len(fast["samples"]["default"]["indices"]) == (limit or 16)


def test_task_picks_the_default_suite_of_a_model_given_by_name() -> None:
    """The default "smoke" is the smoke suite of `task=` for a model the engine loads by name
    (whose own task is known only once loaded)."""
    report = robench.evaluate(
        "transformer_lm_nano_pydocs", task="language-modeling", limit=2, progress=False
    )
    assert report.task == "language-modeling" and report.suite.name == "text-smoke"


# --- item 6: bad input is one sentence, a ValueError, and nothing is written ----------------


class TupleNet(SmallNet):
    def forward(self, x: torch.Tensor) -> Any:  # type: ignore[override]
        return super().forward(x), x


class RGBSegmenter(nn.Module):
    """Per-pixel logits of RGB images: it cannot run on Fashion-MNIST's one channel."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 11, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def _bad_dataloader() -> Any:
    from torch.utils.data import DataLoader

    items = [{"image": torch.rand(1, 28, 28), "label": 0} for _ in range(4)]
    return DataLoader(items, batch_size=2)  # type: ignore[arg-type]


def _vit_without_processor() -> nn.Module:
    pytest.importorskip("transformers")
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(
        image_size=28, patch_size=7, num_channels=1, hidden_size=16, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=32, num_labels=10,
    )  # fmt: skip
    return ViTForImageClassification(config)


BAD_INPUTS: dict[str, tuple[Any, dict[str, Any], str]] = {
    "outputs are not logits": (TupleNet, {}, "returned tuple"),
    "x and y of different lengths": (
        SmallNet,
        {"data": (torch.rand(4, 1, 28, 28), torch.zeros(3, dtype=torch.long))},
        "x has 4 samples but y has 3",
    ),
    "unreadable DataLoader batches": (
        SmallNet,
        {"data": "bad-loader"},
        "batch 0 of the DataLoader is a dict",
    ),
    "transformers image model without processor": (
        _vit_without_processor,
        {"data": None},
        "no image processor was given",
    ),
    "resume without out": (SmallNet, {"resume": True}, "resume=True continues"),
    "invalid suite entry": (
        SmallNet,
        {"suite": [{"kind": "pgd", "eps": "8/255", "stepz": 3}]},
        "unknown key 'stepz'",
    ),
    # meta stands for another device on any machine (cuda:0 is refused first where no GPU is).
    "model on another device": (SmallNet, {"device": "meta"}, "the model is on cpu"),
    "unknown keyword": (SmallNet, {"batchsize": 8}, "Did you mean 'batch_size'"),
    "an engine field as a keyword": (SmallNet, {"command": ["x"]}, "option 'command'"),
    "a module that cannot run on the built-in data": (
        RGBSegmenter,
        {"data": None},
        "cannot run on image-classification inputs of shape (2, 1, 28, 28)",
    ),
    "model_name with a model given by name": (
        lambda: "vit_nano_fmnist",
        {"model_name": "mine", "data": None},
        "model_name describe a model held in memory",
    ),
    "an EvalRequest with options beside it": (
        lambda: robench.EvalRequest(suite="smoke", data=None, out=Path("unused.json")),
        {},
        "an EvalRequest holds the whole evaluation",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_sentence_value_error_and_nothing_is_written(
    case: str, tmp_path: Path
) -> None:
    build, options, words = BAD_INPUTS[case]
    options = {"suite": CLEAN_FGSM, "data": _tensors(8), **options}
    if options["data"] == "bad-loader":
        options["data"] = _bad_dataloader()
    out = tmp_path / "r.json" if case != "resume without out" else None
    with pytest.raises(ValueError) as caught:
        robench.evaluate(build(), out=out, progress=False, **options)
    assert isinstance(caught.value, robench.InputError)
    message = str(caught.value)
    assert words in message and "\n" not in message and "Traceback" not in message
    assert list(tmp_path.iterdir()) == []


class _Parameterless(nn.Module):
    """Logits read straight off the pixels: a model without parameters or buffers."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1)[:, :10] * 10


def test_the_device_follows_the_model_and_a_model_without_parameters_runs_on_cpu() -> None:
    report = robench.evaluate(_Parameterless(), [{"kind": "clean"}], _tensors(8), progress=False)
    assert report.environment.device.startswith("cpu")
    on_cpu = robench.evaluate(SmallNet(), [{"kind": "clean"}], _tensors(8), progress=False)
    assert on_cpu.environment.device.startswith("cpu")


@pytest.mark.parametrize("first", ["cpu", "meta"])
def test_a_model_on_two_devices_is_refused_naming_both(first: str) -> None:
    """A `meta` tensor among the parameters stands for a second device: whichever comes
    first (and so is the default device), the other is found and both are named."""
    model = SmallNet()
    ghost = nn.Parameter(torch.empty(3, device="meta"))
    if first == "meta":
        model.features[0].weight = nn.Parameter(torch.empty(4, 1, 3, 3, device="meta"))
    else:
        model.head.register_parameter("ghost", ghost)
    with pytest.raises(robench.InputError) as caught:
        robench.evaluate(model, [{"kind": "clean"}], _tensors(8), progress=False)
    message = str(caught.value)
    assert "\n" not in message and "cpu" in message and "meta" in message


def test_every_tensor_is_checked_against_the_device_index_included() -> None:
    """The index counts (cuda:1 is not cuda:0), and a buffer counts as a parameter does."""
    from robench.models.sources.memory import check_device

    model = SmallNet()
    check_device(model, "cpu")
    with pytest.raises(ConfigError, match="the model is on cpu but device='cuda:1'"):
        check_device(model, "cuda:1")
    model.features[1].register_buffer("late", torch.empty(1, device="meta"))
    with pytest.raises(ConfigError, match="on cpu and on meta"):
        check_device(model, "cpu")
