"""The evaluation options are defined once (robench/evaluation/options/__init__.py); every surface
agrees with that table: `robench eval`'s flags and help panels, `EvalRequest`, the keywords
`request_from_options` takes, and the README's synopsis. (The sweep plan's table:
tests/test_sweep_plans.py.)"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from robench._core.errors import ConfigError
from robench.cli import app
from robench.evaluation.options import EVAL_OPTIONS, EvalOptions, EvalTarget
from robench.evaluation.options.eval_option import (
    CLI_FORMS,
    COMMAND_LINE,
    COMPOUND_FIELDS,
    DATA_OPTIONS,
    OVERRIDES,
    PANELS,
    REQUEST,
    SPEED_OPTIONS,
)
from robench.evaluation.options.request_options import request_from_options

README = Path(__file__).resolve().parents[1] / "README.md"


def _synopsis() -> str:
    """The code block under the README's "### `robench eval`" heading."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### `robench eval`", 1)[1]
    return section.split("```", 2)[1]


def test_the_readme_synopsis_lists_every_option_and_no_other() -> None:
    synopsis = _synopsis()
    flags = set(re.findall(r"--[a-z][a-z0-9-]*", synopsis))
    long_flags = {option.flags[0] for option in EVAL_OPTIONS.values() if option.flags}
    assert long_flags - flags == set(), "options missing from the README's synopsis"
    assert flags - long_flags == set(), "the README's synopsis lists flags eval does not take"
    assert "[MODEL]" in synopsis  # the positional argument


def _fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def test_eval_request_fields_are_the_options_and_the_compound_fields() -> None:
    from robench.evaluation.request import EvalRequest

    fields = _fields(EvalRequest)
    own = {name for name, option in EVAL_OPTIONS.items() if option.into == REQUEST}
    assert set(fields) == own | set(COMPOUND_FIELDS)
    for name in own:
        default = _default(fields[name])
        if default is not dataclasses.MISSING:  # suite, data and out are required there
            assert EVAL_OPTIONS[name].default == default, name


def test_folded_options_are_fields_of_what_they_fold_into() -> None:
    from robench.evaluation.speed import SpeedOptions
    from robench.models.spec import ModelSpec

    into = {OVERRIDES: set(ModelSpec.model_fields), SPEED_OPTIONS: set(_fields(SpeedOptions))}
    for name, option in EVAL_OPTIONS.items():
        if option.into in into:
            assert name in into[option.into], name
        assert option.into in (REQUEST, OVERRIDES, DATA_OPTIONS, SPEED_OPTIONS, COMMAND_LINE)


def test_choices_written_as_literals_are_the_librarys() -> None:
    from robench.data.unreadable import BAD_IMAGE_POLICIES
    from robench.evaluation.sanity.budget import SANITY_MODES
    from robench.evaluation.speed import AMP_DTYPES

    def literal(name: str) -> tuple[str, ...]:
        (values,) = [
            typing.get_args(t)
            for t in (EVAL_OPTIONS[name].type, *typing.get_args(EVAL_OPTIONS[name].type))
            if typing.get_origin(t) is typing.Literal
        ]
        return values

    assert literal("amp") == tuple(AMP_DTYPES)
    assert literal("sanity_budget") == tuple(SANITY_MODES)
    assert literal("bad_images") == BAD_IMAGE_POLICIES


def test_every_option_is_well_formed() -> None:
    for name, option in EVAL_OPTIONS.items():
        assert option.panel in PANELS and option.form in CLI_FORMS, name
        assert option.help.endswith("."), name
        assert (option.form == "switch") == (option.type is bool), name
        assert (option.form == "choice") == (option.choices is not None), name
    assert [o.name for o in EVAL_OPTIONS.values() if o.argument] == ["model"]
    # The Python API's keywords are the typed keys; the command line's own are not among them.
    typed = set(EvalTarget.__annotations__) | set(EvalOptions.__annotations__)
    assert typed == {n for n, o in EVAL_OPTIONS.items() if o.into != COMMAND_LINE}


def _command() -> Any:
    return typer.main.get_command(app).commands["eval"]  # type: ignore[attr-defined]


def test_robench_eval_takes_every_option_with_its_flags_default_and_panel() -> None:
    params = {param.name: param for param in _command().params}
    assert set(params) == set(EVAL_OPTIONS)
    for name, option in EVAL_OPTIONS.items():
        param = params[name]
        assert param.opts + param.secondary_opts == list(option.flags or (name,)), name
        if option.argument:
            continue
        assert param.help == option.help and param.rich_help_panel == option.panel, name
        expected = None if option.form in ("repeated", "data") else option.default
        assert param.default == expected, name


def test_eval_help_shows_the_panels_in_order() -> None:
    result = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    titles = re.findall(r"╭─ (.+?) ─", result.stdout)
    assert titles == ["Arguments", "Options", *PANELS]
    assert "Examples:" in result.stdout


def test_eval_command_is_short() -> None:
    from robench.cli.eval import eval_command

    source = inspect.getsource(inspect.unwrap(eval_command))
    assert len(source.splitlines()) < 80


def test_the_command_line_and_keywords_build_the_same_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `robench eval` hands `evaluate` is `request_from_options` of the same options."""
    import robench.evaluation.request as request_module

    seen = []

    def capture(request: Any, **kwargs: Any) -> Any:
        seen.append(request)
        raise ConfigError("captured.")

    monkeypatch.setattr(request_module, "evaluate", capture)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("")  # --import runs before the other options are read
    argv = [
        "eval", "vit_nano_fmnist", "-s", "demo", "-d", "fashion-mnist", "--limit", "8",
        "--mean", "0.5", "--std", "0.25", "--input-size", "1,28,28", "--model-kwargs",
        '{"drop_rate": 0.0}', "--sanity-eps", "8/255", "--sanity-budget", "quick",
        "--amp", "bf16", "--compile", "--context", "3", "--import", "a.py", "--import", "json",
        "-o", "r.json", "-f", "json",
    ]  # fmt: skip
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2 and "captured" in result.stderr, result.output
    (from_cli,) = seen
    from_keywords = request_from_options(
        model="vit_nano_fmnist",
        suite="demo",
        data="fashion-mnist",
        limit=8,
        mean=[0.5],
        std=(0.25,),
        input_size=(1, 28, 28),
        model_kwargs={"drop_rate": 0.0},
        sanity_eps="8/255",
        sanity_budget="quick",
        amp="bf16",
        compile=True,
        context=3,
        imports=["a.py", "json"],
        out="r.json",
        command=from_cli.command,
    )
    assert from_keywords == from_cli
    assert from_cli.overrides.mean == (0.5,) and from_cli.speed.amp == "bf16"
    assert from_cli.data_options == {"context": 3} and from_cli.sanity_eps == 8 / 255
    assert from_cli.out == Path("r.json") and from_cli.imports == ("a.py", "json")


def test_request_from_options_defaults_and_compound_fields() -> None:
    from robench.evaluation.speed import SpeedOptions
    from robench.models.spec import ModelSpec

    request = request_from_options(out=Path("r.json"))
    assert (request.suite, request.batch_size, request.imports) == ("smoke", 64, ())
    assert request.overrides == ModelSpec() and request.speed == SpeedOptions()
    given_whole = request_from_options(
        out="r.json",
        overrides=ModelSpec(num_classes=10, crop_pct=0.9),
        speed=SpeedOptions(channels_last=True),
        data_options={"target_length": 8, "context": 1},
        crop_pct=0.5,  # the folded options apply over the compound fields given whole
        amp="fp16",
        context=2,
    )
    assert given_whole.overrides == ModelSpec(num_classes=10, crop_pct=0.5)
    assert given_whole.speed == SpeedOptions(amp="fp16", channels_last=True)
    assert given_whole.data_options == {"target_length": 8, "context": 2}


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"limmit": 5}, "Did you mean 'limit'"),
        ({"format": "json"}, "Unknown evaluation option 'format'"),  # the command line's own
        ({"batch_size": 8, "chanels_last": True}, "Did you mean 'channels_last'"),
        ({"sanity_budget": "most"}, "is not a sanity budget"),
        ({"std": (0.0,)}, "--std"),
        ({"sanity_eps": "one/255"}, "--sanity-eps"),
    ],
)
def test_bad_keywords_are_one_config_error_sentence(options: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        request_from_options(out="r.json", **options)
    message = str(caught.value)
    assert expected in message and "\n" not in message and message.endswith(".")


def test_the_command_line_reads_every_form() -> None:
    from robench.cli._eval_options import _PARSERS, _TEXT_TYPES

    assert set(_PARSERS) == set(CLI_FORMS)
    assert set(_TEXT_TYPES) | {"value", "choice"} == set(CLI_FORMS)
