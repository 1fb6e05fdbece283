"""The house moved (issue 35): old import paths still work for one version, with a
DeprecationWarning naming the new one, and timm pretrained tags load through `SOURCES`."""

from __future__ import annotations

import subprocess
import sys

import pytest

OLD_PATHS = [
    ("import robench.models.plugins as m; m.load_plugins", "robench._core.plugins"),
    ("from robench.results.report import Report", "robench.results.report.schema"),
    ("import robench.results.metrics as m; m.METRICS", "robench.results.stats.metrics"),
]


@pytest.mark.parametrize(("code", "new_home"), OLD_PATHS, ids=[c for c, _ in OLD_PATHS])
def test_an_old_import_path_works_and_names_its_new_home(code: str, new_home: str) -> None:
    # A fresh interpreter: a module imported once warns once.
    run = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0, "the old path imported without a DeprecationWarning"
    assert "DeprecationWarning" in run.stderr and new_home in run.stderr, run.stderr
    quiet = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", code], capture_output=True
    )
    assert quiet.returncode == 0, quiet.stderr


def test_the_old_paths_give_the_same_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    # Imported afresh: a module that warned when another test imported it would not again.
    monkeypatch.delitem(sys.modules, "robench.results.metrics", raising=False)
    with pytest.warns(DeprecationWarning):
        from robench.results.metrics import METRICS as old_metrics
    with pytest.warns(DeprecationWarning):
        from robench.results.report import Report as OldReport
    from robench.results.report.schema import Report
    from robench.results.stats.metrics import METRICS

    assert old_metrics is METRICS and OldReport is Report


def test_timm_pretrained_tags_are_a_registered_source() -> None:
    from robench.models.sources.registry import SOURCES, claiming_source, source_names

    source = SOURCES.get("timm-pretrained-tag")
    assert claiming_source("resnet18.a1_in1k") is source
    assert claiming_source("resnet18") is None  # an architecture, not a tag
    assert claiming_source("vit_nano_elliptical_fmnist") is None  # robench's zoo
    # It has no prefix: `timm-pretrained-tag:x` is not a source name and is not listed as one.
    assert "timm-pretrained-tag:" not in source_names()


def test_a_misspelt_tag_is_answered_with_the_close_ones() -> None:
    from robench._core.errors import ConfigError
    from robench.models.sources.registry import claiming_source

    with pytest.raises(ConfigError, match=r"closest: resnet18\.a1_in1k"):
        claiming_source("resnet18.a1_in1kk")
