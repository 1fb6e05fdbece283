"""The `word-swap` kind: every line of the evaluated text (`LanguageModelingWindows`, or
`DocumentWindows` for a model with its own tokenizer: `.corpus.lines`, `.vocabulary`,
`.with_lines`) swapped once by `swaps.swap_lines`, seeded by its line number, before batching;
the `perturbation_summary` it reports: docs/text-perturbations.md.
"""

from __future__ import annotations

import logging
from typing import Any

from robench.perturbations.base import DatasetPerturbation
from robench.perturbations.text.params import WordSwapParams
from robench.perturbations.text.swaps import swap_lines

logger = logging.getLogger(__name__)


class WordSwap(DatasetPerturbation):
    Params = WordSwapParams
    params: WordSwapParams

    def perturb_dataset(self, dataset: Any, seed: int) -> Any:
        """`dataset` over its lines with words swapped; same lines, same words per line."""
        p = self.params
        lines, stats = swap_lines(dataset.corpus.lines, p, seed)
        perturbed = dataset.with_lines(tuple(lines))
        summary: dict[str, Any] = {
            "swapped_words": stats.swapped,
            "words": stats.words,
            "tokens": stats.tokens,
            "eligible_words": stats.eligible,
            "realised_rate": round(stats.realised_rate, 6),
            "requested_rate": p.rate,
            "method": p.method,
            "lines_with_swap": stats.lines_with_swap,
        }
        # A subword model (its own tokenizer, no word vocabulary) reads any token as subwords.
        if p.method == "replace" and dataset.vocabulary is not None:
            in_vocabulary = p.token in dataset.vocabulary
            summary["token_in_vocabulary"] = in_vocabulary
            if not in_vocabulary:
                summary["note"] = (
                    f"the swap token {p.token!r} is not in the model's vocabulary, "
                    "so it is read as <unk>"
                )
        logger.info(
            "word-swap: %d of %d words swapped (%.2f%%; requested %.2f%% of eligible words)",
            stats.swapped,
            stats.words,
            100 * stats.realised_rate,
            100 * p.rate,
        )
        perturbed.perturbation_summary = summary
        return perturbed
