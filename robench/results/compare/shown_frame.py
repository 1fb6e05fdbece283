"""The DataFrame `robench.compare` returns: a pandas DataFrame that shows all its columns.

pandas hides columns past `display.max_columns`, and a comparison's columns are its results,
so a hidden column hides a result. `ComparisonFrame` renders every column, in a notebook and
as text (wrapped in blocks at `display.width`), and is a DataFrame in every other respect. It
imports pandas: `compare/frames.py` loads it when called.
"""

from __future__ import annotations

import pandas as pd

_ALL_COLUMNS = ("display.max_columns", None, "display.max_colwidth", None)


class ComparisonFrame(pd.DataFrame):
    """A DataFrame shown with all its columns."""

    @property
    def _constructor(self) -> type[ComparisonFrame]:
        return ComparisonFrame

    def _repr_html_(self) -> str | None:
        with pd.option_context(*_ALL_COLUMNS):
            return super()._repr_html_()

    def __repr__(self) -> str:
        with pd.option_context(*_ALL_COLUMNS, "display.expand_frame_repr", True):
            return super().__repr__()
