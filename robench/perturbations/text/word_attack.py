"""A text attack recipe as a perturbation: one search per text, seeded by the runner's per-sample
seed, all advanced together (`greedy_search.run_searches`) in model calls of `query_batch`
texts; a sample's attack is the same at any batch size (docs/text-classification.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from robench._core.extras import require
from robench.data.text.text_rows import decode_rows, encode_rows
from robench.perturbations.base import PerSampleAttack, SampleColumns
from robench.perturbations.own_batch import OwnBatch
from robench.perturbations.text.attack_constraints import AttackConstraints
from robench.perturbations.text.attack_params import TextAttackParams
from robench.perturbations.text.greedy_search import ScoreTexts, run_searches
from robench.perturbations.text.recipes import RECIPES


class WordAttack(PerSampleAttack):
    Params = TextAttackParams

    def __init__(self, params: TextAttackParams) -> None:  # type: ignore[override]
        super().__init__(params)
        self.recipe = RECIPES[params.recipe]
        self.own_batch = OwnBatch(params.recipe, "query_batch", params.query_batch)
        self.constraints = AttackConstraints(**params.constraint_options())  # type: ignore[arg-type]
        for module, needed_for in params.modules.items():
            require(module, needed_for)  # before any sample is attacked, as WordNet below
        if self.recipe.uses_wordnet:
            from robench.perturbations.text.wordnet import check_wordnet

            check_wordnet()  # a missing or broken WordNet: one sentence before any sample

    def perturb_samples(
        self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, seeds: Sequence[int]
    ) -> tuple[torch.Tensor, SampleColumns]:
        params: TextAttackParams = self.params  # type: ignore[assignment]
        searches = [
            self.recipe.start(text, label, self.constraints, seed, params.query_budget)
            for text, label, seed in zip(decode_rows(inputs), targets.tolist(), seeds, strict=True)
        ]
        assert self.own_batch is not None
        outcomes = run_searches(searches, text_scorer(model, inputs.device, self.own_batch))
        # Each column is the outcomes' attribute of its name ("outcome", "queries", ..., "text").
        columns = {name: [getattr(o, name) for o in outcomes] for name in params.columns}
        return encode_rows(columns["text"]).to(inputs.device), columns

    def violation(self, original: str, perturbed: str) -> str | None:
        """Why `perturbed` is not a text this attack may produce from `original`, or None."""
        return self.constraints.violation(original, perturbed)


def text_scorer(model: torch.nn.Module, device: torch.device, own: OwnBatch) -> ScoreTexts:
    """texts -> class probabilities (float64), in model calls of at most `own.size` texts."""

    def score_texts(texts: Sequence[str]) -> np.ndarray:
        parts = []
        with torch.inference_mode(), own.calls():
            for part in own.parts(len(texts)):
                rows = encode_rows(texts[part]).to(device)
                parts.append(model(rows).double().softmax(dim=-1).cpu().numpy())
        return np.concatenate(parts) if parts else np.empty((0, 0))

    return score_texts
