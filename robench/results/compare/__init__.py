"""Tables of results: one report's (`tables.py`), several side by side (`comparison.py`,
`formats.py`, `per_corruption.py`), the HTML page (`html/`) and the pandas frame (`frames.py`).

May import: `robench.results.gate`, `robench.results.plots`, `robench.results.stats`,
`robench.results.report` and `robench._core`.
"""
