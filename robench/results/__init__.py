"""Everything about results once they exist. No torch: `robench compare`, `gate` and
`schema` run without it. Five rooms, each importing only the rooms listed before it:

| room | what it holds |
|---|---|
| `report/` | the report schema, older versions, result checks, output-format records |
| `stats/` | the metric registry, aggregates, intervals, paired and sequential tests, curves |
| `gate/` | `robench gate`: paired checks, policy, multiple testing, sequential gate, formats |
| `plots/` | figures (matplotlib, Agg) |
| `compare/` | tables of one or several reports, `robench compare`'s formats, the HTML page |

`tests/test_architecture.py` enforces that order.

May import: `robench._core`.
"""
