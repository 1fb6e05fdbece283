"""Reader for IDX files (the MNIST / Fashion-MNIST format), gzipped or not.

Format: two zero bytes, a type code, the number of dimensions, one big-endian uint32 per
dimension, then the data in C order. http://yann.lecun.com/exdb/mnist/
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np

from robench._core.errors import DataError

_IDX_DTYPES: dict[int, np.dtype[Any]] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path: str | Path) -> np.ndarray:
    """Read one IDX file (optionally .gz) into a numpy array of its stored shape."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            raw = fh.read()
    except (OSError, EOFError) as exc:
        raise DataError(
            f"cannot read IDX file {path}: {exc}; check that the file is complete."
        ) from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise DataError(
            f"{path} is not an IDX file (bad magic number); expected MNIST-style "
            "'*-images-idx3-ubyte[.gz]' and '*-labels-idx1-ubyte[.gz]' files."
        )
    dtype, ndim = _IDX_DTYPES[raw[2]], raw[3]
    header = 4 + 4 * ndim
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise DataError(
            f"{path} holds {len(raw) - header} data bytes but its header promises {expected}; "
            "the file is truncated or corrupt, download it again."
        )
    return (
        np.frombuffer(raw, dtype=dtype, offset=header)
        .reshape(shape)
        .astype(dtype.newbyteorder("="))
    )
