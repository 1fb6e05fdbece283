"""`robench gate`: did a candidate regress against a baseline? The paired checks
(`regression.py`), aggregates paired across reports (`aggregates.py`), the policy and its
tolerances (`policy.py`), Holm/BH decisions (`checks.py`), the sequential gate
(`sequential.py`), the gate's output formats (`formats.py`) and its verdict for Python callers
with a checks frame (`frames.py`, `robench.gate`).

May import: `robench.results.stats`, `robench.results.report` and `robench._core`.
"""
