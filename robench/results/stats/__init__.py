"""Statistics: from per-sample records to numbers with intervals. The metric registry
(`metrics.py`), aggregates such as mCE, the one bootstrap over samples every interval and
paired test uses (`bootstrap.py`), paired, multiple and sequential tests, confidence
sequences, and curves from attack columns.

May import: `robench.results.report` and `robench._core`.
"""
