"""Checks made before a run scores anything: the extras its suite needs are installed
(`required_extras`), EOT is not asked of a deterministic model (`eot_warnings`), and wrong names
are answered before torch loads (`preflight`, where present)."""
