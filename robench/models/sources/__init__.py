"""Model sources: where MODEL comes from. `registry.py` holds `SOURCES`, the one ordered table
`load_model` walks; each builder module loads one kind. This `__init__` imports nothing.
"""
