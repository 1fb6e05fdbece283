"""The foundation every other part builds on: the generic registry, lazy entries
("module:attribute", imported on first use), plugin and entry-point loading, errors and exit
codes, TOML reading, bundled files, seeding, pixel units, file modes, torch.distributed
set-up.

May import: nothing from robench outside `_core`. torch is imported only by the modules that
need it (seeding, distributed), never by this package's `__init__`.
"""
