"""The corruption functions: the reference is the library, fast equals the reference, and every
corruption keeps shape and dtype, is deterministic, changes the image and leaves numpy's global
RNG alone, on small grey images (Fashion-MNIST size) as on RGB ones.

Test images are crops and resizes of the photographs shipped inside scikit-image's wheel
(`skimage.data`; no download), so textures, edges and flat areas are those of real photos.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import numpy as np
import pytest
from PIL import Image

from robench.perturbations.corruptions import (
    ALL,
    EXTRA,
    GROUPS,
    IMPLEMENTATIONS,
    SEVERITIES,
    STANDARD,
    corrupt_image,
)
from robench.perturbations.corruptions.apply import _IMPLEMENTATIONS, CorruptionInputError, luma
from robench.perturbations.corruptions.fast import FAST_NAMES, corrupt_fast
from robench.perturbations.corruptions.reference import SEEDED_BY_ARGUMENT, corrupt_reference

skimage_data = pytest.importorskip("skimage.data")
SEED = 20240611
PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")


def _photo(name: str) -> np.ndarray:
    return np.ascontiguousarray(getattr(skimage_data, name)())


def _resized(name: str, size: int) -> np.ndarray:
    return np.asarray(Image.fromarray(_photo(name)).resize((size, size), Image.BILINEAR))


def _crops(count: int, size: int) -> list[np.ndarray]:
    """`count` size x size crops at spread-out positions of the four photographs."""
    crops = []
    for k in range(count):
        photo = _photo(PHOTOS[k % len(PHOTOS)])
        top = (k * 37) % (photo.shape[0] - size)
        left = (k * 71) % (photo.shape[1] - size)
        crops.append(np.ascontiguousarray(photo[top : top + size, left : left + size]))
    return crops


def _library(image: np.ndarray, name: str, severity: int, seed: int) -> np.ndarray:
    from imagecorruptions import corrupt

    kwargs = {"seed": seed} if name in SEEDED_BY_ARGUMENT else {}
    np.random.seed(seed)
    return corrupt(image, severity, name, **kwargs)


def _rng_state() -> tuple:
    return np.random.get_state(legacy=True)  # type: ignore[return-value]


def _same_rng_state(before: tuple, after: tuple) -> bool:
    return before[0] == after[0] and np.array_equal(before[1], after[1]) and before[2:] == after[2:]


def test_names_follow_imagenet_c() -> None:
    from imagecorruptions import get_corruption_names

    assert list(STANDARD) == get_corruption_names("common")
    assert list(EXTRA) == get_corruption_names("validation")
    for group, names in GROUPS.items():
        assert list(names) == get_corruption_names(group)
    assert len(ALL) == len(set(ALL)) == 19


def test_the_package_names_the_implementations_apply_runs() -> None:
    # The package lists them without importing apply (numpy); apply's table is what runs.
    assert tuple(_IMPLEMENTATIONS) == IMPLEMENTATIONS
    with pytest.raises(CorruptionInputError, match="Did you mean 'fast'"):
        corrupt_image(np.zeros((8, 8), np.uint8), "fog", 1, 0, implementation="fats")


def test_import_stays_light() -> None:
    code = (
        "import sys, robench.perturbations.corruptions; "
        "print(sorted({'cv2', 'skimage', 'numba', 'scipy', 'imagecorruptions'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("name", ALL)
def test_reference_is_the_library(name: str) -> None:
    """Same seeding, same pixels as `imagecorruptions.corrupt`, at 224 px and at 64 px."""
    images = [_resized("astronaut", 224), _crops(1, 64)[0]]
    for image in images:
        for severity in SEVERITIES:
            before = _rng_state()
            ours = corrupt_reference(image, name, severity, SEED + severity)
            assert _same_rng_state(before, _rng_state())
            theirs = _library(image, name, severity, SEED + severity)
            np.random.set_state(before)
            assert ours.dtype == np.uint8 and ours.shape == image.shape
            assert np.array_equal(ours, theirs), (name, image.shape, severity)


def _assert_fast_matches(images: list[np.ndarray], name: str) -> None:
    for index, image in enumerate(images):
        for severity in SEVERITIES:
            seed = SEED + 100 * index + severity
            fast = corrupt_fast(image, name, severity, seed)
            reference = corrupt_reference(image, name, severity, seed)
            diff = np.abs(fast.astype(np.int16) - reference)
            # Every reimplementation is exact (see fast.py); report the extent if not.
            assert diff.max() == 0, (
                f"{name} severity {severity} image {index} {image.shape}: max diff "
                f"{diff.max()}, {np.mean(diff > 0):.4%} of values differ"
            )


@pytest.mark.parametrize("name", sorted(FAST_NAMES))
def test_fast_equals_reference(name: str) -> None:
    """A quick check at 224 px and on a crop whose sides differ."""
    _assert_fast_matches([_resized("coffee", 224), _photo("chelsea")[40:97, 13:101]], name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAST_NAMES))
def test_fast_equals_reference_on_20_images(name: str) -> None:
    """20 real images: 2 at 224 px, 18 crops of 48 to 96 px, every severity."""
    images = [_resized("rocket", 224), _resized("chelsea", 224)]
    images += _crops(6, 48) + _crops(6, 64) + _crops(6, 96)
    _assert_fast_matches(images, name)


# (corruption, severity) pairs that may legitimately return the clean image. spatter's liquid
# layer is thresholded, and on 28 to 32 px images no droplet may survive the threshold.
# saturate scales HSV saturation at severities 1 to 3 (and adds to it at 4 and 5): a grey
# image has none, so those three severities are the identity on it.
MAY_BE_UNCHANGED = {("spatter", s) for s in SEVERITIES} | {("saturate", s) for s in (1, 2, 3)}


@pytest.mark.parametrize("implementation", ["fast", "reference"])
@pytest.mark.parametrize("kind", ["grey28", "rgb32"])
def test_contract_on_small_images(kind: str, implementation: str) -> None:
    if kind == "grey28":
        image = np.asarray(Image.fromarray(_photo("astronaut")).convert("L").resize((28, 28)))
    else:
        image = _crops(1, 32)[0]
    unchanged = set()
    for name in ALL:
        for severity in SEVERITIES:
            before = _rng_state()
            out = corrupt_image(image, name, severity, SEED, implementation)
            assert _same_rng_state(before, _rng_state()), (name, severity)
            assert out.shape == image.shape and out.dtype == np.uint8, (name, severity)
            assert out.flags.writeable and out.flags.c_contiguous, (name, severity)
            again = corrupt_image(image, name, severity, SEED, implementation)
            assert np.array_equal(out, again), (name, severity)
            if np.array_equal(out, image):
                unchanged.add((name, severity))
    assert unchanged <= MAY_BE_UNCHANGED, unchanged - MAY_BE_UNCHANGED


def test_seed_changes_random_corruptions() -> None:
    image = _crops(1, 32)[0]
    for name in ("gaussian_noise", "impulse_noise", "glass_blur", "snow", "elastic_transform"):
        a = corrupt_image(image, name, 3, 1)
        b = corrupt_image(image, name, 3, 2)
        assert not np.array_equal(a, b), name


def test_small_motion_blur_keeps_every_tap() -> None:
    """The library loses kernel weight on small images (a flat 200 comes back darker);
    edge padding keeps all of it, so a flat image stays flat."""
    flat = np.full((28, 28, 3), 200, np.uint8)
    for seed in range(10):
        out = corrupt_reference(flat, "motion_blur", 5, seed)
        assert out.min() >= 199, seed  # full kernel: 200 up to rounding, truncated
        assert np.array_equal(out, corrupt_fast(flat, "motion_blur", 5, seed))


def test_fast_matches_on_grey_small_images() -> None:
    grey = np.asarray(Image.fromarray(_photo("camera")).resize((28, 28)))
    for name in sorted(FAST_NAMES):
        for severity in SEVERITIES:
            fast = corrupt_image(grey, name, severity, SEED, "fast")
            assert np.array_equal(fast, corrupt_image(grey, name, severity, SEED, "reference"))


def test_grey_conversion_is_pils() -> None:
    rgb = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    assert np.array_equal(luma(rgb), np.asarray(Image.fromarray(rgb).convert("L")))
    grey = rgb[..., :1]  # (H, W, 1) in, (H, W, 1) out
    out = corrupt_image(grey, "contrast", 2, 0)
    assert out.shape == grey.shape and out.dtype == np.uint8


BAD_CALLS: list[tuple[Callable[[], object], str]] = [
    (
        lambda: corrupt_image(np.zeros((32, 32, 3), np.uint8), "gausian_noise", 1, 0),
        "gaussian_noise",
    ),
    (lambda: corrupt_image(np.zeros((32, 32, 3), np.uint8), "fog", 0, 0), "severity"),
    (lambda: corrupt_image(np.zeros((32, 32, 3), np.uint8), "fog", 6, 0), "severity"),
    (lambda: corrupt_image(np.zeros((32, 32, 3), np.uint8), "fog", True, 0), "severity"),
    (lambda: corrupt_image(np.zeros((32, 32, 3), np.float32), "fog", 1, 0), "uint8"),
    (lambda: corrupt_image(np.zeros((32, 32, 4), np.uint8), "fog", 1, 0), "shape"),
    (lambda: corrupt_image(np.zeros((32, 32, 3), np.uint8), "fog", 1, -1), "seed"),
    (lambda: corrupt_image(np.zeros((32, 32, 3), np.uint8), "fog", 1, 0, "fastest"), "fast"),
]


@pytest.mark.parametrize(("call", "expected"), BAD_CALLS)
def test_bad_arguments_raise(call: Callable[[], object], expected: str) -> None:
    with pytest.raises(CorruptionInputError, match=expected) as info:
        call()
    assert isinstance(info.value, ValueError)


def test_unknown_name_lists_the_names() -> None:
    with pytest.raises(ValueError, match="Did you mean 'zoom_blur'") as info:
        corrupt_image(np.zeros((32, 32, 3), np.uint8), "zoom-blur", 1, 0)
    assert all(name in str(info.value) for name in ALL)


def test_uncacheable_kernel_still_compiles() -> None:
    """numba cannot cache a function without a source file; `_jit` must fall back."""
    from robench.perturbations.corruptions._kernels import _jit

    namespace: dict[str, object] = {}
    exec("def double(x):\n    return 2 * x\n", namespace)
    assert _jit(namespace["double"])(21) == 42  # type: ignore[operator]
