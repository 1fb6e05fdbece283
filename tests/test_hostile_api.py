"""The Python API under hostile input (issue 48): one `InputError` sentence, never a
traceback and never a silently wrong number.

Non-finite logits and data are refused naming the sample and the model; keywords go through
the option table's types and ranges; the results functions check their arguments; the
caller's model comes back with its buffers as they were; options that cannot apply are
refused; plugins that fail are named. hypothesis fuzzes the keywords at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from torch import nn

import robench
from robench._core.errors import PluginError, RobenchError
from robench._core.lazy import LazyEntry
from robench._core.plugins import call_plugin
from robench.api._evaluate import option_names
from robench.perturbations.adversarial.torchattacks_adapter import clip_rounding
from robench.results.report.output_formats import OutputFormat

CLEAN = [{"kind": "clean"}]
FGSM = [{"kind": "fgsm", "eps": "1/255"}]


def _model(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 10))


def _data(n: int = 20) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return torch.rand(n, 1, 28, 28, generator=generator), torch.arange(n) % 10


def _evaluate(model: Any = None, suite: Any = CLEAN, data: Any = None, **kw: Any) -> Any:
    return robench.evaluate(
        _model() if model is None else model,
        suite=suite,
        data=_data() if data is None else data,
        progress=False,
        **kw,
    )


def _refused(call: Any, *phrases: str) -> str:
    with pytest.raises(robench.InputError) as refused:
        call()
    message = str(refused.value)
    assert "\n" not in message and "Traceback" not in message, message
    for phrase in phrases:
        assert phrase in message, message
    return message


class _Diverged(nn.Module):
    """Finite on every sample but `bad` (its logits are NaN there): weights gone wrong."""

    def __init__(self, bad: int) -> None:
        super().__init__()
        self.net = _model()
        self.bad = bad

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.net(x)
        # Sample `bad` is recognised by its first pixel, as the data below sets it.
        marked = (x.flatten(1)[:, 0] == 0.5).unsqueeze(1)
        return torch.where(marked, torch.full_like(logits, float("nan")), logits)


def test_a_model_with_nan_weights_is_refused_not_scored() -> None:
    model = _model()
    with torch.no_grad():
        next(model.parameters()).fill_(float("nan"))
    _refused(lambda: _evaluate(model), "non-finite logits", "sample 0", "Sequential")


def test_non_finite_logits_in_a_later_batch_name_the_sample_and_allow_nonfinite_counts_them() -> (
    None
):
    x, y = _data()
    x[13, 0, 0, 0] = 0.5
    message = _refused(
        lambda: _evaluate(_Diverged(13), data=(x, y), batch_size=8, model_name="diverged"),
        "diverged returned non-finite logits",
        "sample 13",
        "--allow-nonfinite",
    )
    assert "clean" in message
    report = _evaluate(_Diverged(13), data=(x, y), batch_size=8, allow_nonfinite=True)
    assert report.results[0].n_samples == 20


def test_nan_in_the_data_names_the_sample_for_clean_and_for_attacks() -> None:
    x, y = _data()
    x[13, 0, 3, 3] = float("nan")
    _refused(lambda: _evaluate(data=(x, y), batch_size=8), "sample 13 of the data", "NaN")
    _refused(lambda: _evaluate(suite=FGSM, data=(x, y), batch_size=8), "sample(s) 13", "NaN")


def test_images_on_the_0_255_scale_are_the_data_s_fault_not_an_attack_s() -> None:
    x, y = _data()
    _refused(lambda: _evaluate(suite=FGSM, data=(x * 255, y)), "outside [0, 1]", "divide by 255")


def test_a_surrogate_with_nan_weights_is_refused() -> None:
    surrogate = _model(1)
    with torch.no_grad():
        list(surrogate.parameters())[1].fill_(float("inf"))
    _refused(
        lambda: _evaluate(suite=[*CLEAN, *FGSM], surrogate=surrogate), "surrogate", "NaN or inf"
    )


def test_a_surrogate_with_only_certification_is_refused_as_an_option_that_cannot_apply() -> None:
    suite = [
        *CLEAN,
        {"kind": "randomized-smoothing", "sigma": 0.25, "n0": 4, "n": 8, "batch": 8},
    ]
    _refused(lambda: _evaluate(suite=suite, surrogate=_model(1)), "surrogate", "certification")


class _Counter(nn.Module):
    """Updates its own buffer in every forward (a call counter)."""

    calls: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.net = _model()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.net(x)


def test_a_model_that_mutates_its_buffer_in_forward_is_restored() -> None:
    model = _Counter()
    before = model.calls
    _evaluate(model)
    assert model.calls is before and float(model.calls) == 0.0


@pytest.mark.parametrize(
    ("keywords", "phrase"),
    [
        ({"suite": 42}, "is not a suite"),
        ({"device": "banana"}, "is not a device"),
        ({"limit": "abc"}, "limit takes: an integer"),
        ({"seed": 2**70}, "--seed"),
        ({"batch_size": 0}, "--batch-size"),
        ({"amp": "fp8"}, "one of 'bf16', 'fp16'"),
        ({"preprocessing": {"mean": [0.5], "std": [0.0], "size": (1, 28, 28)}}, "std"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_bad_keywords_are_one_sentence(keywords: dict[str, Any], phrase: str) -> None:
    suite = keywords.pop("suite", CLEAN)
    _refused(lambda: _evaluate(suite=suite, **keywords), phrase)


def test_evaluate_s_own_keywords_are_typed_too() -> None:
    x, y = _data(4)
    yes: Any = "yes"
    three: Any = 3
    _refused(lambda: robench.evaluate(_model(), CLEAN, (x, y), progress=yes), "progress")
    _refused(lambda: robench.evaluate(_model(), CLEAN, (x, y), task=three), "task")


@pytest.mark.parametrize(
    ("data", "phrase"),
    [
        ((torch.randint(0, 255, (8, 1, 28, 28)), torch.arange(8)), "torch.int64 images"),
        ((torch.rand(8, 1, 28, 28), torch.arange(8) + 10), "label 17 but the model predicts 10"),
        (torch.utils.data.TensorDataset(torch.rand(0, 1), torch.rand(0)), "no samples"),
    ],
    ids=["int64", "labels-10-19", "empty"],
)
def test_misleading_data_messages_name_the_real_cause(data: Any, phrase: str) -> None:
    _refused(lambda: _evaluate(data=data), phrase)


@pytest.fixture(scope="module")
def report() -> Any:
    return robench.evaluate(_model(), suite=CLEAN, data=_data(8), progress=False)


def test_results_functions_check_their_arguments(report: Any, tmp_path: Path) -> None:
    number: Any = 42
    both: Any = [report, report]
    fraction: Any = 0.1
    _refused(lambda: robench.reports_frame(number), "is not a report")
    _refused(lambda: robench.samples_frame(both), "a list of 2", "not a report")
    _refused(lambda: robench.compare(number), "is not a report")
    _refused(lambda: robench.gate(report, report, policy=fraction), "is not a gate policy")
    (tmp_path / "file").write_text("x")
    _refused(lambda: report.save(tmp_path / "file" / "r.json"), "is a file")
    _refused(lambda: report.save(42), "path")
    assert list(tmp_path.iterdir()) == [tmp_path / "file"]


def test_the_gate_refuses_a_per_sample_value_that_is_not_a_number(report: Any) -> None:
    edited = report.model_copy(deep=True)
    values = edited.samples["default"].values["clean"]
    values["nll"][1] = "abc"
    _refused(lambda: robench.gate(report, edited), "clean/nll", "sample 1", "not a finite number")


def test_library_rounding_below_zero_is_clipped_and_recorded() -> None:
    adv = torch.rand(3, 1, 4, 4)
    adv[1, 0, 0, 0] = -2e-5
    clipped, amounts = clip_rounding(adv)
    assert float(clipped.min()) >= 0 and amounts[1] == pytest.approx(2e-5) and amounts[0] == 0
    adv[2, 0, 0, 0] = -0.5  # not rounding: left for the runner's check to refuse
    unchanged, _ = clip_rounding(adv)
    assert float(unchanged.min()) == -0.5


def test_plugin_failures_name_the_plugin() -> None:
    def broken(x: int) -> int:
        return x // 0

    with pytest.raises(PluginError, match=r"metric 'boom' \(.*broken.*\) raised ZeroDivisionError"):
        call_plugin("metric 'boom'", broken, 1)
    silent = OutputFormat(lambda result, strict: None, (".txt",), "gate output format 'x'")
    with pytest.raises(PluginError, match="returned None"):
        silent(None, False)
    with pytest.raises(RobenchError, match="cannot be imported"):
        LazyEntry("ghost", "no_such_module_for_robench:Ghost").load()


def test_pixel_noise_on_token_ids_held_in_memory_is_refused() -> None:
    from robench.models.zoo.lm_registry import create_language_model

    torch.manual_seed(0)
    kwargs = {"vocab_size": 16, "num_classes": 10, "pad_id": 0, "max_length": 48}
    model = create_language_model("lra_transformer_nano", **kwargs)
    data = [(torch.randint(1, 16, (40,)), i % 10) for i in range(8)]
    suite = {
        "name": "s",
        "version": 1,
        "task": "sequence-classification",
        "perturbations": [{"kind": "clean"}, {"kind": "pixel-noise", "std": "8/255"}],
    }
    run = robench.evaluate
    _refused(
        lambda: run(model, suite=suite, data=data, progress=False, allow_random_weights=True),
        "token ids",
        "lra_task",
    )


# Keywords whose fuzzing would do real work besides the check (processes, compilation,
# GPU, imports of arbitrary modules, files): their types are checked all the same.
_NOT_FUZZED = {"imports", "compile", "workers", "device", "out", "resume", "overwrite", "sanity"}
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.floats(min_value=-2, max_value=2), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=1),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(set(option_names()) - _NOT_FUZZED)),
    value=_VALUES,
)
# Found by the fuzzer: the missing-checkpoint message quoted the path raw, newline and all.
@example(name="checkpoint", value="\n")
def test_any_keyword_value_works_or_raises_robench_s_error(name: str, value: Any) -> None:
    x, y = _data(4)
    try:
        keywords = {"limit": 2, name: value}
        robench.evaluate(_model(), suite=CLEAN, data=(x, y), progress=False, **keywords)
    except RobenchError as exc:
        assert str(exc) and "\n" not in str(exc), repr(exc)


def test_a_bad_value_in_a_data_dict_is_named_by_its_key() -> None:
    """A dict of data= maps dataset names to data; the error names the entry, not data=."""
    x, _ = _data(4)
    with pytest.raises(RobenchError, match=r"^data\['default'\] is a Tensor; .* dataset names"):
        robench.evaluate(_model(), suite=CLEAN, data={"default": x}, progress=False)
