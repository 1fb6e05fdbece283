"""The per-sample store: records appended to a JSON-lines file as a run goes (`sample_store`),
and the exclusive lock that keeps two runs from writing one store (`lock`).
"""
