"""The Python API: `robench.evaluate(model, suite, data, **options) -> Report`.

It runs the engine `robench eval` runs (robench/evaluation), so both give the same numbers;
`cli` does not import it, nor it `cli`. Implementation in `_`-prefixed modules.

May import: every part below it (`robench.evaluation`, `robench.training`, `robench.tasks`,
`robench.perturbations`, `robench.diagnostics`, `robench.models`, `robench.data`,
`robench.results`, `robench._core`).
"""

from __future__ import annotations

import warnings

from robench._core.errors import InputError as InputError

with warnings.catch_warnings():
    # In a notebook without ipywidgets, importing tqdm.autonotebook (huggingface_hub does, and
    # timm imports it) warns "IProgress not found" about bars robench never draws: it shows
    # its own progress (api/_progress.py). Silenced here, for this import only.
    warnings.filterwarnings("ignore", message="IProgress not found")
    from robench.api._evaluate import evaluate as evaluate
    from robench.api._evaluate import option_names as option_names

__all__ = ["InputError", "evaluate", "option_names"]
