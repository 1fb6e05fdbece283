"""Speed modes of `robench eval` (--amp, --channels-last, --compile) and the out-of-memory
fallback, on the shipped model and Fashion-MNIST (docs/formats.md, "Speed modes")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from report_factory import make_report
from torch import nn
from typer.testing import CliRunner

from robench._core.errors import ConfigError
from robench.cli import app
from robench.evaluation.oom_fallback import SplitOnOutOfMemory, _smaller, is_out_of_memory
from robench.evaluation.request import EvalRequest, evaluate
from robench.evaluation.speed import SpeedOptions, check_speed
from robench.evaluation.store.sample_store import samples_path_for
from robench.perturbations.base import PERTURBATIONS
from robench.results.report.schema import Report, SpeedInfo, precision_note, scoring_precision_of
from robench.tasks.image_classification import ImageClassification

MODEL = "vit_nano_fmnist"
CLEAN_SUITE = 'name = "clean"\nversion = 1\n\n[[perturbations]]\nkind = "clean"\n'


@pytest.fixture
def clean_suite(tmp_path: Path) -> str:
    path = tmp_path / "clean.toml"
    path.write_text(CLEAN_SUITE, encoding="utf-8")
    return str(path)


def _evaluate(out: Path, suite: str, **options: Any) -> Report:
    request = EvalRequest(suite=suite, data="fashion-mnist", out=out, model=MODEL, **options)
    return evaluate(request)


def _predictions(report: Report, result: str = "clean") -> list[int]:
    values = report.sample_values(result, "prediction")
    assert values is not None
    return values


@pytest.mark.slow
def test_mixed_precision_moves_clean_top1_by_at_most_half_a_point(
    tmp_path: Path, clean_suite: str
) -> None:
    common = {"limit": 1000, "batch_size": 250}
    full = _evaluate(tmp_path / "fp32.json", clean_suite, **common)
    assert full.speed is not None and full.speed.amp is None
    for amp in ("bf16", "fp16"):
        out = tmp_path / f"{amp}.json"
        mixed = _evaluate(out, clean_suite, speed=SpeedOptions(amp=amp), **common)
        fp32, low = (r.result("clean").metrics["top1"].value for r in (full, mixed))  # type: ignore[union-attr]
        assert abs(fp32 - low) <= 0.005, (amp, fp32, low)
        assert mixed.speed is not None and mixed.speed.amp == amp
        assert json.loads(out.read_text())["speed"]["amp"] == amp
        header = json.loads(samples_path_for(out).read_text().splitlines()[0])
        assert header["fingerprint"]["amp"] == amp  # another --amp does not resume this run
    header = json.loads(samples_path_for(tmp_path / "fp32.json").read_text().splitlines()[0])
    assert "amp" not in header["fingerprint"]  # stores of float32 runs keep their fingerprint


def test_attacks_and_their_scoring_stay_float32(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under --amp bf16 the clean pass is scored in bf16; FGSM and PGD, and the scoring of
    their outputs, run in float32."""
    seen: list[tuple[torch.dtype, bool]] = []
    score = ImageClassification.score

    def spy(self: ImageClassification, model: nn.Module, inputs: torch.Tensor, targets):  # type: ignore[no-untyped-def]
        with torch.no_grad():
            seen.append((model(inputs[:1]).dtype, torch.is_autocast_enabled("cpu")))
        return score(self, model, inputs, targets)

    monkeypatch.setattr(ImageClassification, "score", spy)
    report = _evaluate(
        tmp_path / "r.json", "smoke", limit=16, batch_size=16, speed=SpeedOptions(amp="bf16")
    )
    assert [r.name for r in report.results] == ["clean", "fgsm", "pgd-5"]
    # First the first-batch check before any pass (labels outside the outputs are named
    # before the gradient checks; request._check_first_batches), outside --amp.
    check = (torch.float32, False)
    passes = [(torch.bfloat16, True), (torch.float32, False), (torch.float32, False)]
    assert seen == [check, *passes]


AMP_ATTACKS_SUITE = (
    'name = "amp-attacks"\nversion = 1\namp_attacks = true\n\n[[perturbations]]\nkind = "clean"\n'
    '\n[[perturbations]]\nkind = "fgsm"\neps = "2/255"\n'
)


@pytest.mark.parametrize("amp", ["bf16", None])
def test_a_suite_may_run_its_attacks_under_amp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, amp: str | None
) -> None:
    """`amp_attacks = true`: under --amp, FGSM's gradient pass and the scoring of its output
    run in bf16 as well, and the report says so; without --amp the key changes nothing."""
    scored: list[bool] = []
    attacked: list[bool] = []
    score = ImageClassification.score
    fgsm = PERTURBATIONS.get("fgsm").load()
    perturb = fgsm.perturb

    def spy_score(self, model, inputs, targets):  # type: ignore[no-untyped-def]
        scored.append(torch.is_autocast_enabled("cpu"))
        return score(self, model, inputs, targets)

    def spy_perturb(self, model, images, labels, seed):  # type: ignore[no-untyped-def]
        attacked.append(torch.is_autocast_enabled("cpu"))
        return perturb(self, model, images, labels, seed)

    monkeypatch.setattr(ImageClassification, "score", spy_score)
    monkeypatch.setattr(fgsm, "perturb", spy_perturb)
    suite = tmp_path / "amp.toml"
    suite.write_text(AMP_ATTACKS_SUITE, encoding="utf-8")
    report = _evaluate(
        tmp_path / "r.json", str(suite), limit=8, batch_size=8, speed=SpeedOptions(amp=amp)
    )
    assert report.speed is not None
    on = amp is not None
    # The first score is the first-batch check's (request._check_first_batches), outside --amp.
    assert scored == [False, on, on] and attacked == [on]
    assert report.speed.amp_attacks is on
    assert any("attacks ran in bf16" in w for w in report.warnings) is on
    assert scoring_precision_of(report) == ("bf16 autocast" if on else "fp32")
    assert report.environment.precision == scoring_precision_of(report)


def test_precision_note_tells_attacks_in_amp_apart() -> None:
    bf16 = SpeedInfo(amp="bf16", channels_last=False, compile=False, batch_size_used=8)
    clean_only = make_report().model_copy(update={"speed": bf16})
    attacks_too = make_report().model_copy(
        update={"speed": bf16.model_copy(update={"amp_attacks": True})}
    )
    assert precision_note([clean_only, clean_only], ["a", "b"]) is None
    note = precision_note([clean_only, attacks_too], ["a", "b"])
    assert note is not None and "a bf16 autocast, attacks fp32, b bf16 autocast" in note


class _OutOfMemoryAbove(nn.Module):
    """The model, but a batch of more than `limit` samples raises CUDA's out-of-memory error
    (simulated on CPU)."""

    def __init__(self, model: nn.Module, limit: int) -> None:
        super().__init__()
        self.model, self.limit = model, limit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > self.limit:
            raise torch.cuda.OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate 2.00 GiB for {x.shape[0]} samples"
            )
        return self.model(x)


def _run_out_of_memory_above(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """The run's model (what speed.prepare_model returns) fails above `limit` samples; the
    checks before the run still see the real model."""
    monkeypatch.setattr(
        "robench.evaluation.request.prepare_model",
        lambda model, options, example: _OutOfMemoryAbove(model, limit),
    )


def test_out_of_memory_splits_batches_and_matches_a_run_with_the_smaller_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of 32 fail above 8 samples: the run goes on in parts of 8 (32 -> 16 -> 8) and
    every per-sample result, PGD's random start included, equals a run with -b 8."""
    common = {"limit": 100, "seed": 3}  # 32, 32, 32, 4: the last batch is short
    direct = _evaluate(tmp_path / "b8.json", "smoke", batch_size=8, **common)
    _run_out_of_memory_above(monkeypatch, 8)
    split = _evaluate(tmp_path / "b32.json", "smoke", batch_size=32, **common)

    assert split.batch_size == 32
    assert split.speed is not None and split.speed.batch_size_used == 8
    assert split.speed.batch_size_note is not None
    assert "clean batch 0 on 32 samples" in split.speed.batch_size_note
    assert direct.speed is not None and direct.speed.batch_size_used == 8
    assert direct.speed.batch_size_note is None
    assert split.samples == direct.samples
    assert [r.metrics for r in split.results] == [r.metrics for r in direct.results]
    # The store keeps whole batches of 32, so --resume is unchanged.
    lines = samples_path_for(tmp_path / "b32.json").read_text().splitlines()
    assert len(lines) == 1 + 3 * 4 + 1  # header, 3 results x 4 batches, completion marker


def test_out_of_memory_on_a_single_sample_is_one_error_line(
    tmp_path: Path, clean_suite: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run_out_of_memory_above(monkeypatch, 0)
    out = tmp_path / "r.json"
    args = ["eval", MODEL, "-s", clean_suite, "--limit", "8", "-b", "4", "-o", str(out)]
    error = _one_error_line(args)
    assert "out of GPU memory on a single sample at clean batch 0" in error
    assert "use a GPU with more memory" in error
    assert not out.exists() and not samples_path_for(out).exists()


def _one_error_line(args: list[str]) -> str:
    """The one `error:` line of a `robench` command that fails with exit 2."""
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


class _OutOfMemoryAfter(nn.Module):
    """The model, but every call after the first `calls` runs out of GPU memory (simulated):
    the GPU filled up part-way through the run."""

    def __init__(self, model: nn.Module, calls: int) -> None:
        super().__init__()
        self.model, self.calls = model, calls

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls -= 1
        if self.calls < 0:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB")
        return self.model(x)


def test_out_of_memory_part_way_keeps_the_finished_batches_for_resume(
    tmp_path: Path, clean_suite: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r.json"
    args = ["eval", MODEL, "-s", clean_suite, "--limit", "16", "-b", "4", "-o", str(out)]
    with monkeypatch.context() as patch:
        patch.setattr(
            "robench.evaluation.request.prepare_model",
            lambda model, options, example: _OutOfMemoryAfter(model, 2),
        )
        error = _one_error_line(args)
    assert "out of GPU memory on a single sample at clean batch 2" in error
    assert "rerun the same command with --resume" in error
    assert not out.exists()
    kept = samples_path_for(out).read_text().splitlines()
    assert len(kept) == 3  # the header and batches 0 and 1

    resumed = CliRunner().invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    whole = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "whole.json")])
    assert whole.exit_code == 0, whole.output
    report, baseline = (
        json.loads(out.read_text()),
        json.loads((tmp_path / "whole.json").read_text()),
    )
    assert report["samples"] == baseline["samples"]
    assert report["results"][0]["metrics"] == baseline["results"][0]["metrics"]


def test_the_part_size_always_divides_the_batch_size() -> None:
    def sizes(size: int) -> list[int]:
        found = [size]
        while found[-1] > 1:
            found.append(_smaller(found[-1]))
        return found

    assert sizes(64) == [64, 32, 16, 8, 4, 2, 1]
    assert sizes(100) == [100, 50, 25, 5, 1]
    assert sizes(7) == [7, 1]


def test_only_cuda_out_of_memory_splits_a_batch() -> None:
    assert is_out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried ..."))
    assert is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB"))
    assert not is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    assert not is_out_of_memory(ValueError("CUDA out of memory"))

    calls: list[tuple[int, int, int]] = []

    def work(start: int, stop: int, size: int) -> dict[str, list[Any]]:
        calls.append((start, stop, size))
        if stop - start > 3:
            raise RuntimeError("CUDA out of memory. Tried to allocate 1 GiB")
        return {"i": list(range(start, stop))}

    splitter = SplitOnOutOfMemory(6)
    assert splitter.run(6, work, "clean batch 0") == {"i": [0, 1, 2, 3, 4, 5]}
    assert splitter.run(5, work, "clean batch 1") == {"i": [0, 1, 2, 3, 4]}
    assert calls == [(0, 6, 6), (0, 3, 3), (3, 6, 3), (0, 3, 3), (3, 5, 3)]
    assert splitter.size == 3

    def broken(start: int, stop: int, size: int) -> dict[str, list[Any]]:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    with pytest.raises(RuntimeError, match="shapes"):  # anything else is not retried
        SplitOnOutOfMemory(4).run(4, broken, "clean batch 0")


@pytest.mark.slow
def test_channels_last_gives_the_default_predictions(tmp_path: Path, clean_suite: str) -> None:
    common = {"limit": 500, "batch_size": 100}
    default = _evaluate(tmp_path / "a.json", clean_suite, **common)
    nhwc = _evaluate(
        tmp_path / "b.json", clean_suite, speed=SpeedOptions(channels_last=True), **common
    )
    assert _predictions(nhwc) == _predictions(default)
    assert nhwc.speed is not None and nhwc.speed.channels_last


@pytest.mark.slow
def test_compile_gives_the_eager_predictions(tmp_path: Path, clean_suite: str) -> None:
    """torch.compile works on this CPU machine (it needs a C++ compiler): same predictions."""
    common = {"limit": 256, "batch_size": 64}  # one batch shape: one compilation
    eager = _evaluate(tmp_path / "a.json", clean_suite, **common)
    compiled = _evaluate(
        tmp_path / "b.json", clean_suite, speed=SpeedOptions(compile=True), **common
    )
    assert _predictions(compiled) == _predictions(eager)
    assert compiled.speed is not None and compiled.speed.compile


def test_compile_that_fails_is_refused_before_the_run(
    tmp_path: Path, clean_suite: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_compiler(model: nn.Module) -> Any:
        def run(*args: Any) -> Any:
            raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found\nmore lines")

        return run

    monkeypatch.setattr(torch, "compile", no_compiler)
    out = tmp_path / "r.json"
    refused = r"could not compile the model \(InvalidCxxCompiler: No working C\+\+ compiler found\)"
    with pytest.raises(ConfigError, match=refused + "; drop --compile"):
        _evaluate(out, clean_suite, limit=8, speed=SpeedOptions(compile=True))
    assert not samples_path_for(out).exists()


def test_speed_options_refuse_what_cannot_be_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"--amp 'fp8' is not a mixed-precision mode; pass one"):
        SpeedOptions(amp="fp8")
    cpu = torch.device("cpu")
    tokens = torch.zeros(2, 16, dtype=torch.long)
    with pytest.raises(ConfigError, match=r"have 2 dimensions .*drop --channels-last"):
        check_speed(SpeedOptions(channels_last=True), cpu, tokens)
    check_speed(SpeedOptions(amp="bf16", channels_last=True), cpu, torch.zeros(2, 1, 8, 8))

    class _NoAutocast:  # a torch that falls back to float32, as it does where unsupported
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def __enter__(self) -> None:
            pass

        def __exit__(self, *args: Any) -> None:
            pass

    monkeypatch.setattr(torch, "autocast", _NoAutocast)
    with pytest.raises(ConfigError, match="cannot autocast to float16 on cpu; pass --amp bf16"):
        check_speed(SpeedOptions(amp="fp16"), cpu, torch.zeros(2, 1, 8, 8))
