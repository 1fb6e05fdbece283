"""The demo's subword language model: a GPT-2 with its own byte-level BPE tokenizer.

`models/gpt2_bpe_pydocs/` is a transformers folder trained on the Python docs
(examples/train_bpe_lm.py; the card is its README.md), evaluated as `hf:FOLDER` under the
word-level pair's text suite, in a table of its own: its token perplexity counts BPE tokens,
so only bits per byte compare across the tokenizers.
"""

from __future__ import annotations

import logging
from pathlib import Path

from robench._core.bundled import bundled_dir
from robench._core.progress import Progress
from robench.cli._demo.pairs import evaluate_roles
from robench.results.report.schema import Report

logger = logging.getLogger(__name__)

BPE_MODEL_FOLDER = "gpt2_bpe_pydocs"
# Documents of the Python-docs test split (whole .rst files; it has 19), by plan: a few
# seconds on a CPU.
BPE_DOCUMENTS: dict[str, int | None] = {"full": None, "quick": 4}  # None: all 19


def bpe_model_folder() -> Path | None:
    """The shipped folder, or None in a trimmed install without it."""
    folder = bundled_dir("models") / BPE_MODEL_FOLDER
    return folder if (folder / "config.json").is_file() else None


def shown_folder(folder: Path) -> Path:
    """`folder` relative to the working directory when it lies inside it (`make demo` runs
    from the repository root: `models/gpt2_bpe_pydocs`), so the report does not carry this
    machine's absolute path; else `folder` as it is."""
    try:
        return folder.relative_to(Path.cwd())
    except ValueError:
        return folder


def evaluate_bpe_demo(
    out_dir: Path,
    suite: str,
    *,
    quick: bool,
    command: list[str],
    progress: Progress | None = None,
) -> list[tuple[Path, Report]]:
    """The BPE model's report under `suite`; none when the folder is not shipped. Its bits
    per byte compare with the word-level models' (both divide by the text's UTF-8 bytes)."""
    folder = bpe_model_folder()
    if folder is None:
        logger.warning("models/%s is not installed: the BPE section is skipped", BPE_MODEL_FOLDER)
        return []
    limit = BPE_DOCUMENTS["quick" if quick else "full"]
    line = f"evaluating hf:{folder.name}: suite {suite} on {limit or 'all'} documents"
    return evaluate_roles(  # OUT_DIR/gpt2-bpe-text.json, on the task's built-in corpus
        out_dir, {"gpt2-bpe": f"hf:{shown_folder(folder)}"}, suite=suite, suffix="-text",
        limit=limit, batch_size=8, command=command, progress=progress,
        start=lambda _: logger.info("demo: %s", line),
    )  # fmt: skip
