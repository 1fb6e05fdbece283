"""Everything about results once they exist: the report schema, the metric registry,
statistics, tables, `compare` and its formats, `gate` and its policy and formats, result
checks and plots. No torch: `robench compare`, `gate` and `schema` run without it.

May import: `robench._core`.
"""
