"""The LRA generators against their specifications, checked by independent code
(tests/lra_oracles.py), not by the generators' own: ListOps expressions are re-parsed from the
written text and evaluated by a stack machine (statistics.median for MED), and Pathfinder
labels are recomputed from the pixels by a breadth-first search over lit pixels from one marker
to the other."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy import ndimage

from robench._core.errors import ConfigError
from robench.data.lra import open_lra
from robench.data.lra.listops_generator import ListOpsSpec, generate, write_listops
from robench.data.lra.pathfinder_generator import (
    CONTOUR_LENGTHS,
    PathfinderSpec,
    draw_pathfinder,
    write_pathfinder,
)
from tests.lra_oracles import OPERATORS, connected, marker_centres, parse


def _check_rows(rows: list[tuple[str, int]], spec: ListOpsSpec) -> None:
    assert len({source for source, _ in rows}) == len(rows), "an expression appears twice"
    for source, label in rows:
        value, length, depth, operators = parse(source)
        assert value == label
        assert 0 <= label <= 9
        assert spec.min_length < length < spec.max_length
        assert depth <= spec.max_depth
        for operator, arity in operators:
            assert operator in OPERATORS
            assert 2 <= arity <= spec.max_args
        # The parentheses are LRA's print of its binary tree: one pair per argument, one per ].
        assert source.count("(") == source.count(")") == sum(a + 1 for _, a in operators)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    max_depth=st.integers(2, 10),
    max_args=st.integers(2, 10),
    min_length=st.integers(0, 40),
    span=st.integers(20, 200),
)
def test_listops_expressions_evaluate_to_their_labels_within_bounds(
    seed: int, max_depth: int, max_args: int, min_length: int, span: int
) -> None:
    spec = ListOpsSpec(
        max_depth=max_depth, max_args=max_args, min_length=min_length, max_length=min_length + span
    )
    # Settings where the longest possible tree barely passes min_length admit a handful of
    # expressions, found in ~10^5 draws at best (refused, as the next test shows): keep to
    # settings with room.
    longest = 1
    for _ in range(max_depth - 1):
        longest = min(2 + max_args * longest, 10**6)
    assume(longest >= 3 * (min_length + 1))
    # Below 6 arguments an operator has fewer than 1 operator argument on average (LRA draws
    # one with probability 0.25): long trees are then rare, so keep such settings short.
    assume(max_args >= 6 or min_length <= 8)
    rows = generate(8, seed, spec)
    _check_rows(rows, spec)


def test_listops_with_lra_settings_meets_them() -> None:
    spec = ListOpsSpec()
    rows = generate(25, 7, spec)
    _check_rows(rows, spec)
    operators = [op for source, _ in rows for op, _ in parse(source)[3]]
    arities = [arity for source, _ in rows for _, arity in parse(source)[3]]
    # The distribution LRA draws from: every operator, every arity 2..10 shows up.
    assert set(operators) == set(OPERATORS)
    assert set(arities) == set(range(2, 11))
    assert max(parse(source)[2] for source, _ in rows) == 10  # trees reach the depth bound


def test_listops_is_seeded() -> None:
    spec = ListOpsSpec(min_length=10, max_length=120)
    assert generate(20, 3, spec) == generate(20, 3, spec)
    assert generate(20, 3, spec) != generate(20, 4, spec)


def test_listops_files_are_lras_tsv_and_read_back(tmp_path: Path) -> None:
    spec = ListOpsSpec(min_length=10, max_length=300)
    write_listops(tmp_path, {"train": 30, "val": 5, "test": 7}, seed=1, spec=spec)
    sources: dict[str, list[str]] = {}
    for split, count in (("train", 30), ("val", 5), ("test", 7)):
        with (tmp_path / f"basic_{split}.tsv").open(newline="") as handle:
            rows = list(csv.reader(handle, delimiter="\t"))
        assert rows[0] == ["Source", "Target"]
        assert len(rows) == count + 1
        _check_rows([(s, int(t)) for s, t in rows[1:]], spec)
        sources[split] = [s for s, _ in rows[1:]]
        dataset = open_lra(tmp_path, "listops", split, max_length=300)
        assert dataset.targets == [int(t) for _, t in rows[1:]]
        assert [(dataset[i][0] != 0).sum().item() for i in range(len(dataset))] == [
            parse(s)[1] for s, _ in rows[1:]
        ]
    assert not set(sources["train"]) & (set(sources["val"]) | set(sources["test"]))
    assert not set(sources["val"]) & set(sources["test"])


@pytest.mark.parametrize(
    "spec",
    [
        ListOpsSpec(max_depth=3, max_args=3, min_length=100),  # too shallow to be that long
        ListOpsSpec(min_length=100, max_length=101),  # no length strictly between
        ListOpsSpec(max_args=1),
    ],
)
def test_impossible_listops_settings_are_refused(spec: ListOpsSpec) -> None:
    with pytest.raises(ConfigError):
        generate(1, 0, spec)


def test_listops_settings_with_too_few_expressions_are_refused() -> None:
    # Depth 2, 2 arguments, length 4: 4 operators x 10^2 digit pairs = 400 expressions.
    spec = ListOpsSpec(max_depth=2, max_args=2, min_length=3, max_length=5)
    assert len(generate(400, 0, spec)) == 400
    with pytest.raises(ConfigError, match="distinct ListOps expressions"):
        generate(401, 0, spec)


# ---------------------------------------------------------------------------------------------
# Pathfinder: connectivity recomputed from the pixels.

SPLITS = ("train", "val", "test")


def _check_image(pixels: np.ndarray, label: int, markers: tuple[tuple[int, int], ...]) -> None:
    assert pixels.shape == (32, 32) and pixels.dtype == np.uint8
    assert set(np.unique(pixels)) <= {0, 191, 255}
    bright = {(int(r), int(c)) for r, c in zip(*np.nonzero(pixels == 255), strict=True)}
    blocks = {(r + dr, c + dc) for r, c in markers for dr in (-1, 0, 1) for dc in (-1, 0, 1)}
    assert bright == blocks, "the markers are the only full-brightness pixels"
    assert markers[0] != markers[1]
    assert connected(pixels, markers[0], markers[1]) == bool(label)
    # The paths are dashes: apart from the markers, every 8-connected group of lit pixels is
    # one dash of 2 pixels (or what a marker leaves of one), never two dashes touching.
    components, count = ndimage.label((pixels > 0) & (pixels < 255), structure=np.ones((3, 3)))
    assert count and np.bincount(components.ravel())[1:].max() <= 2


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    difficulty=st.sampled_from(sorted(CONTOUR_LENGTHS)),
    label=st.sampled_from([0, 1, None]),
)
def test_pathfinder_labels_equal_connectivity_of_the_markers(
    seed: int, difficulty: str, label: int | None
) -> None:
    spec = PathfinderSpec(contour_length=CONTOUR_LENGTHS[difficulty])
    image = draw_pathfinder(np.random.default_rng(seed), spec, label)
    if label is not None:
        assert image.label == label
    _check_image(image.pixels, image.label, image.markers)
    # A connected pair marks the two ends of one path of contour_length dashes of 3 pixels
    # (dash and gap), so the markers are at most that far apart.
    if image.label == 1:
        (r0, c0), (r1, c1) = image.markers
        assert max(abs(r0 - r1), abs(c0 - c1)) <= 3 * spec.contour_length


def test_pathfinder_is_seeded_and_balanced() -> None:
    spec = PathfinderSpec(contour_length=9)
    first = draw_pathfinder(np.random.default_rng(5), spec)
    again = draw_pathfinder(np.random.default_rng(5), spec)
    assert np.array_equal(first.pixels, again.pixels) and first.label == again.label
    rng = np.random.default_rng(0)
    labels = [draw_pathfinder(rng, spec).label for _ in range(200)]
    assert 70 <= sum(labels) <= 130  # Binomial(200, 0.5): 5 standard deviations either way


def test_pathfinder_files_are_the_release_layout_and_their_labels_hold(tmp_path: Path) -> None:
    write_pathfinder(tmp_path, 40, seed=3, difficulties=("curv_baseline", "curv_contour_length_14"))
    for difficulty in ("curv_baseline", "curv_contour_length_14"):
        folder = tmp_path / difficulty
        lines = (folder / "metadata" / "0.npy").read_text().splitlines()
        assert len(lines) == 40
        labels = []
        for line in lines:
            fields = line.split(" ")
            assert len(fields) == 11 and fields[0] == "imgs/0"
            assert (folder / fields[0] / fields[1]).is_file()
            labels.append(int(fields[3]))
        for split in ("train", "val", "test"):
            dataset = open_lra(tmp_path, "pathfinder", split, difficulty=difficulty)
            for i in range(len(dataset)):
                tokens, label = dataset[i]
                pixels = tokens.numpy().reshape(32, 32).astype(np.uint8)
                centres = marker_centres(pixels)
                if len(centres) == 1:  # the two blocks touch: only a loop of one path does that
                    assert label == 1
                    continue
                assert len(centres) == 2
                assert connected(pixels, centres[0], centres[1]) == bool(label)
        sizes = [len(open_lra(tmp_path, "pathfinder", s, difficulty=difficulty)) for s in SPLITS]
        assert sizes == [32, 4, 4]  # 80% / 10% / 10% in metadata order
        assert (
            open_lra(tmp_path, "pathfinder", "train", difficulty=difficulty).targets
            == (labels[:32])
        )
        assert 0 < sum(labels) < 40


def test_generated_data_differs_between_difficulties_in_path_length() -> None:
    rng = random.Random(0)
    lit = {}
    for difficulty, length in CONTOUR_LENGTHS.items():
        spec = PathfinderSpec(contour_length=length)
        images = [
            draw_pathfinder(np.random.default_rng(rng.randrange(2**32)), spec) for _ in range(20)
        ]
        lit[difficulty] = np.mean([(im.pixels == 191).sum() for im in images])
    assert lit["curv_baseline"] < lit["curv_contour_length_9"] < lit["curv_contour_length_14"]
