"""`robench gate`: did a candidate regress against a baseline? Paired checks (`regression.py`,
`aggregates.py`, `checks.py`), the policy (`policy.py`), the sequential gate, the output
formats and tables, and the verdict for Python callers (`frames.py`, `robench.gate`).

May import: `robench.results.stats`, `robench.results.report` and `robench._core`.
"""
