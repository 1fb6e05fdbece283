"""The counted cost of a result equals the passes counted by hand from each algorithm.

A pass is one sample through the model (a batch of 64 is 64). Every count below is written
from the algorithm's definition (torchattacks' FGSM and PGD loops, pyautoattack's
`run_standard_evaluation` and its four attacks' loops, Cohen et al.'s CERTIFY), with the
runner's re-run of the model to score the perturbed batch (one forward per sample) added; and
the sanity budget's estimate (`passes_per_sample()`, in forward-equivalents: a backward
weighs 2) is at least the counted cost.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import robench
from robench.evaluation.suites import suite_from_data
from robench.models.pass_counter import PassCounter, scoring
from robench.results.report.schema import PerturbationResult

N_CLASSES = 10
SHAPE = (1, 8, 8)


def _tiny_model() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, N_CLASSES))
    with torch.no_grad():
        model[1].weight.mul_(20)  # wide margins: a tiny eps breaks nothing
    return model.eval()


def _data(model: nn.Module, n: int, wrong: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`n` images labelled with the model's prediction, except the first `wrong` (shifted by
    one class), which the model misclassifies from the start."""
    x = torch.rand(n, *SHAPE, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        y = model(x).argmax(1)
    y[:wrong] = (y[:wrong] + 1) % N_CLASSES
    return x, y


def _run(entry: dict, n: int = 6, wrong: int = 0, batch_size: int = 3) -> PerturbationResult:
    model = _tiny_model()
    report = robench.evaluate(
        model, suite=[entry], data=_data(model, n, wrong), batch_size=batch_size
    )
    return report.results[0]


def _estimate(entry: dict) -> int:
    """The sanity budget's passes per sample of `entry` (forward-equivalents)."""
    planned = suite_from_data([entry], "image-classification").plan[0]
    return planned.params.passes_per_sample(N_CLASSES)


def _check(result: PerturbationResult, entry: dict, forward: int, backward: int, n: int) -> None:
    cost = result.cost
    assert cost is not None
    assert (cost.forward, cost.backward, cost.samples) == (forward, backward, n)
    assert cost.scoring_forward == n  # the runner's re-run: one forward per sample
    assert cost.passes_per_sample == pytest.approx((forward + backward) / n)
    assert _estimate(entry) * n >= forward + 2 * backward  # the budget is an upper bound


def test_counter_counts_samples_of_forwards_and_backwards() -> None:
    model = _tiny_model()
    counter = PassCounter()
    x = torch.rand(5, *SHAPE, requires_grad=True)
    with counter.counting(model, model) as count:  # listed twice, hooked once
        with torch.no_grad():
            model(x)  # 5 forwards, no graph: no backward possible
        out = model(x)
        for k in range(3):  # FAB's gradient of each logit: three backwards through one forward
            out[:, k].sum().backward(retain_graph=True)
        with scoring():
            model(x[:2])
    assert (count.forward, count.backward, count.scoring_forward) == (12, 15, 2)
    model(x)  # hooks removed on exit
    assert count.forward == 12


def test_clean_fgsm_and_pgd_counts() -> None:
    n, k = 6, 5
    clean = {"kind": "clean", "name": "clean"}
    _check(_run(clean), clean, forward=n, backward=0, n=n)
    fgsm = {"kind": "fgsm", "name": "fgsm", "eps": 0.03}
    # torchattacks FGSM: one forward and backward at the clean image; then the re-run.
    _check(_run(fgsm), fgsm, forward=2 * n, backward=n, n=n)
    pgd = {"kind": "pgd", "name": "pgd", "eps": 0.03, "steps": k}
    # torchattacks PGD: a forward and backward per step (none at the random start).
    _check(_run(pgd), pgd, forward=(k + 1) * n, backward=k * n, n=n)


def test_autoattack_counts_follow_pyautoattack_loops() -> None:
    """AutoAttack standard's four attacks on a model they cannot break (eps far below every
    margin), with `wrong` samples misclassified from the start: pyautoattack attacks only the
    r samples still robust, and each attack runs to its end on every one of them."""
    n, wrong, batch = 6, 2, 3
    iters, targets, queries = 4, 3, 7
    entry = {
        "kind": "autoattack",
        "name": "aa",
        "eps": 1e-6,
        "n_iter": iters,
        "n_target_classes": targets,
        "n_queries": queries,
    }
    result = _run(entry, n=n, wrong=wrong, batch_size=batch)
    assert result.metrics["top1"].value == pytest.approx((n - wrong) / n)  # nothing broken
    r = n - wrong  # robust samples (the misclassified ones are in the first batch)
    # Per batch of b samples: robench's probe of the outputs (1 sample), the library's checks
    # (5 randomness, 1 range, 1 dynamic) and its clean prediction: 8 b.
    forward = n // batch * 1 + 8 * n
    # APGD-CE: perturb's prediction, the start's and every iteration's gradient, then
    # AutoAttack's prediction of the result.
    forward += r * (1 + (iters + 1) + 1)
    backward = r * (iters + 1)
    # APGD-T: perturb's prediction; per target the ranking forward and (iters + 1) gradients;
    # AutoAttack's prediction.
    forward += r * (1 + targets * (1 + iters + 1) + 1)
    backward += r * targets * (iters + 1)
    # FAB-T: perturb's prediction; per target attack_single_run's two predictions, per
    # iteration a gradient of the logit difference and a prediction, then the check of its
    # result; AutoAttack's prediction.
    forward += r * (1 + targets * (2 + 2 * iters + 1) + 1)
    backward += r * targets * iters
    # Square: perturb's prediction, the start's margin, one query per iteration (no sample is
    # ever fooled, so all stay), the check of its result; AutoAttack's prediction.
    forward += r * (1 + 1 + queries + 1 + 1)
    forward += n  # the runner's re-run
    _check(result, entry, forward=forward, backward=backward, n=n)


def test_apgd_t_skips_samples_broken_by_an_earlier_target() -> None:
    """APGD-T at an eps that breaks samples: pyautoattack attacks target t + 1 only on the
    samples target t left robust. The survivors after each target are read from runs with
    1, 2, ... targets (the library reseeds at every `perturb`, so each run repeats the last)."""
    n, iters, targets = 6, 3, 3
    entry = {"kind": "autoattack", "name": "t", "attacks": ["apgd-t"], "eps": 0.3}
    entry |= {"n_iter": iters}

    def robust_after(t: int) -> int:
        found = _run({**entry, "n_target_classes": t}, n=n, batch_size=n)
        return round(found.metrics["top1"].value * n)

    attacked = [n] + [robust_after(t) for t in range(1, targets)]
    assert attacked[-1] < n  # the eps breaks something: the test means something
    result = _run({**entry, "n_target_classes": targets}, n=n, batch_size=n)
    forward = 1 + 8 * n + n + sum(a * (1 + iters + 1) for a in attacked) + n + n
    backward = sum(a * (iters + 1) for a in attacked)
    _check(result, {**entry, "n_target_classes": targets}, forward, backward, n)


def test_randomized_smoothing_counts_every_noisy_copy() -> None:
    n, n0, draws = 4, 7, 30
    entry = {
        "kind": "randomized-smoothing",
        "name": "rs",
        "sigma": 0.25,
        "n0": n0,
        "n": draws,
        "batch": 8,
    }
    # CERTIFY: n0 selection copies and n estimation copies per sample (batched by 8: the
    # count is in copies, whatever the batching), then the runner's re-run of the clean image.
    _check(_run(entry, n=n, batch_size=2), entry, forward=n * (n0 + draws + 1), backward=0, n=n)
