"""Fuzzing the declarative-file parsers: any text either parses or raises robench's own error.

A suite, a gate policy or a model card is user input; whatever it holds, the parser must answer
with a `RobenchError` (one sentence, exit 2), never a KeyError, TypeError or pydantic error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robench._core.errors import RobenchError
from robench.evaluation.suites import load_suite
from robench.models.spec import read_card
from robench.results.gate.policy import read_policy

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Keys and values each file format uses, so examples reach validation, not only TOML syntax.
KEYS = [
    "name", "version", "description", "task", "kind", "eps", "epsilon", "steps", "step_size",
    "norm", "metrics", "perturbations", "diagnostics", "sanity_eps", "architecture",
    "num_classes", "input_size", "mean", "std", "crop_pct", "interpolation", "checkpoint",
    "checkpoint_sha256", "rules", "metric", "max_drop", "alpha", "corruptions", "severities",
    "classes", "dataset", "max_samples", "subset", "aggregates", "data_options",
]  # fmt: skip
KINDS = ["clean", "fgsm", "pgd", "corruption", "autoattack", "word-swap", "nope", ""]

scalars = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.sampled_from(["8/255", "1/0", "abc", "", "-1", "nan", "inf", "1e309", *KINDS]),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=10,
)
tables = st.dictionaries(st.sampled_from(KEYS), values, max_size=8)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(str(value), repr(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"


def _toml(table: dict[str, Any], arrays: dict[str, list[dict[str, Any]]]) -> str:
    lines = [f"{key} = {_toml_value(value)}" for key, value in table.items()]
    for name, entries in arrays.items():
        for entry in entries:
            lines.append(f"[[{name}]]")
            lines += [f"{key} = {_toml_value(value)}" for key, value in entry.items()]
    return "\n".join(lines) + "\n"


def _entries(kind_key: str) -> st.SearchStrategy[list[dict[str, Any]]]:
    entry = st.builds(lambda kind, rest: {kind_key: kind, **rest}, st.sampled_from(KINDS), tables)
    return st.lists(entry, max_size=3)


structured = st.builds(
    _toml,
    tables,
    st.fixed_dictionaries(
        {}, optional={"perturbations": _entries("kind"), "rules": _entries("metric")}
    ),
)
# Structured documents, raw text (syntax errors, odd unicode) and raw bytes as text.
documents = st.one_of(structured, st.text(max_size=200))


def _parses_or_robench_error(parse: Callable[[Path], Any], path: Path, text: str | bytes) -> None:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    with contextlib.suppress(RobenchError):  # an error is fine; anything else fails the test
        parse(path)


PARSERS: dict[str, Callable[[Path], Any]] = {
    "suite": lambda path: load_suite(str(path)),
    "gate policy": read_policy,
    "model card": read_card,
}


@pytest.mark.parametrize("what", list(PARSERS))
@FUZZ
@given(text=documents)
def test_text_parses_or_raises_robench_error(what: str, text: str, tmp_path: Path) -> None:
    _parses_or_robench_error(PARSERS[what], tmp_path / "fuzz.toml", text)


@pytest.mark.parametrize("what", list(PARSERS))
@settings(max_examples=30, deadline=None, suppress_health_check=list(FUZZ.suppress_health_check))
@given(data=st.binary(max_size=64))
def test_bytes_parse_or_raise_robench_error(what: str, data: bytes, tmp_path: Path) -> None:
    _parses_or_robench_error(PARSERS[what], tmp_path / "fuzz.toml", data)
