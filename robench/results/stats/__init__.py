"""Statistics: from per-sample records to numbers with intervals. The metric registry
(`metrics.py`), aggregates such as mCE (`aggregates.py`, `aggregate_samples.py`,
`alexnet_reference.py`), the one bootstrap over samples every interval and paired test uses
(`bootstrap.py`), ratio-of-sums and counts statistics, paired tests (`paired_tests.py`:
McNemar and the paired bootstrap; `paired_statistic.py`), multiple testing, confidence
sequences and sequential tests, and accuracy against eps or iterations from attack columns
(`robustness_curves.py`, `curve_checks.py`).

May import: `robench.results.report` and `robench._core`.
"""
