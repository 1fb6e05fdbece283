"""Tables of results: one report's table (`tables.py`), several reports side by side
(`comparison.py`) in `robench compare`'s formats (`formats.py`), the per-corruption table
(`per_corruption.py`), the self-contained HTML page (`html/`) and the comparison as a pandas
frame (`frames.py`, `robench.compare`).

May import: `robench.results.gate`, `robench.results.plots`, `robench.results.stats`,
`robench.results.report` and `robench._core`.
"""
