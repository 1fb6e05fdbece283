"""Suite files: finding one (a shipped name or a path), reading it, and resolving `include`.

The include rules (what an including file's keys replace, merge, add or `drop`) and the suite's
sha256 (the file's bytes without includes, else the resolved content's canonical JSON): see
docs/formats.md, "Including another suite".
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robench._core.bundled import bundled_dir
from robench._core.errors import ConfigError
from robench._core.registry import did_you_mean
from robench._core.toml_files import read_toml

ENTRY_TABLES = ("perturbations", "diagnostics")


@dataclass(frozen=True)
class SuiteSource:
    """A suite file's data with its includes resolved."""

    data: dict[str, Any]  # the resolved TOML data, without `include` and `drop`
    sha256: str
    includes: tuple[Path, ...] = ()  # the files it includes, nearest first

    def describe(self, path: Path) -> str:
        """How error messages name the suite: its file, and the files it includes."""
        named = f"suite file {path}"
        return named + (f" (with {', '.join(map(str, self.includes))})" if self.includes else "")


def bundled_suites() -> dict[str, Path]:
    """Shipped suites by name (file stem)."""
    return {p.stem: p for p in sorted(bundled_dir("attacks").glob("*.toml"))}


def resolve_suite_path(name_or_path: str) -> Path:
    """A shipped suite's name, or a path to a TOML file.

    A shipped name wins over a same-named file or folder in the working directory (a `smoke/`
    output folder must not shadow the `smoke` suite); write `./smoke.toml` for a local file.
    """
    candidate = Path(name_or_path)
    shipped = bundled_suites()
    looks_like_path = candidate.suffix == ".toml" or len(candidate.parts) > 1
    if name_or_path in shipped and not looks_like_path:
        return shipped[name_or_path]
    if looks_like_path or candidate.exists():
        if not candidate.is_file():
            state = "is a directory" if candidate.is_dir() else "does not exist"
            raise ConfigError(
                f"suite file {candidate} {state}; pass a .toml suite file or a shipped suite "
                "name (`robench list suites`)."
            )
        return candidate
    raise ConfigError(
        did_you_mean(name_or_path, list(shipped), "suite")[:-1]
        + " (or pass a path to a .toml suite file)."
    )


def read_suite_file(path: Path) -> SuiteSource:
    """The suite file's data, its includes resolved; every problem is one ConfigError."""
    return _resolve(path, ())


def _resolve(path: Path, chain: tuple[Path, ...]) -> SuiteSource:
    """`chain`: the files that include this one, outermost first (to refuse a loop)."""
    if path.resolve() in chain:
        loop = " -> ".join(str(p) for p in (*chain, path.resolve()))
        raise ConfigError(
            f"suite file {path} includes itself ({loop}); remove one of these includes."
        )
    data, raw = read_toml(path, "suite")
    include, drop = data.pop("include", None), data.pop("drop", None)
    if include is None:
        if drop is not None:
            raise ConfigError(
                f"suite file {path} has `drop` but no `include`; `drop` names entries of an "
                "included suite: add `include = NAME_OR_PATH` or remove `drop`."
            )
        return SuiteSource(data, hashlib.sha256(raw).hexdigest())
    _check_own_identity(path, include, data)
    included_path = _include_path(path, include)
    included = _resolve(included_path, (*chain, path.resolve()))
    base = _relative_to(included.data, included_path.parent, path.parent)
    merged = _merge(base, data, _drop_list(path, drop), path)
    canonical = json.dumps(merged, sort_keys=True, default=str)
    sha256 = hashlib.sha256(canonical.encode()).hexdigest()
    return SuiteSource(merged, sha256, (included_path, *included.includes))


def _check_own_identity(path: Path, include: object, data: dict[str, Any]) -> None:
    if not isinstance(include, str) or not include:
        raise ConfigError(
            f"suite file {path}: `include` must be a shipped suite's name or a .toml path, "
            f'not {include!r}; e.g. include = "smoke".'
        )
    missing = [key for key in ("name", "version") if key not in data]
    if missing:
        raise ConfigError(
            f"suite file {path} includes {include} but gives no {' or '.join(missing)}; give "
            "it its own name and version, so that its reports are not taken for the included "
            "suite's."
        )


def _include_path(path: Path, include: str) -> Path:
    """A .toml path (relative to the including file's folder) or a shipped suite's name."""
    candidate = Path(include).expanduser()
    if candidate.suffix == ".toml" or len(candidate.parts) > 1:
        target = Path(os.path.normpath(path.parent / candidate))  # as written if absolute
        if not target.is_file():
            raise ConfigError(
                f"suite file {path} includes {include}, but {target} is not a file; give a "
                "shipped suite's name or a .toml path relative to the including file."
            )
        return target
    shipped = bundled_suites()
    if include not in shipped:
        raise ConfigError(
            f"suite file {path} includes {include!r}, which is no shipped suite"
            f"{close_match(include, list(shipped))}; give a shipped suite's name (`robench list "
            "suites`) or a .toml path relative to the including file."
        )
    return shipped[include]


def _drop_list(path: Path, drop: object) -> list[str]:
    if drop is None:
        return []
    if not isinstance(drop, list) or not all(isinstance(name, str) for name in drop):
        raise ConfigError(
            f"suite file {path}: `drop` must be a list of entry names, not {drop!r}; e.g. "
            'drop = ["pgd-20"].'
        )
    return list(drop)


def close_match(name: str, choices: list[str]) -> str:
    """ " (did you mean 'x'?)" when a choice is close to `name`, else ""."""
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _label(entry: object) -> object:
    """An entry's result name: its `name`, else its `kind` (what `_Entry.label` gives)."""
    return (entry.get("name") or entry.get("kind")) if isinstance(entry, dict) else None


def _merge(
    base: dict[str, Any], own: dict[str, Any], drop: list[str], path: Path
) -> dict[str, Any]:
    """`own` laid over `base` (the rules of this module's docstring)."""
    labels = [_label(e) for table in ENTRY_TABLES for e in base.get(table) or []]
    unknown = [name for name in drop if name not in labels]
    if unknown:
        raise ConfigError(
            f"suite file {path} drops {unknown[0]!r}, which the included suite does not have"
            f"{close_match(unknown[0], [str(label) for label in labels])}; drop the included "
            "entries by their result names (`robench validate --resolved` lists them)."
        )
    merged = _lay_over(base, own)
    for table in ENTRY_TABLES:
        added = own.get(table, [])
        if not isinstance(added, list):
            continue  # not an array of tables: validation says so
        kept = [e for e in base.get(table) or [] if _label(e) not in drop]
        merged[table] = _merge_entries(kept, added, path)
        if not merged[table]:
            del merged[table]
    return merged


def _lay_over(base: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """`own`'s keys over `base`'s; a table in both is merged the same way, at any depth."""
    merged = {**base, **own}
    for key, value in own.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merged[key] = _lay_over(base[key], value)
    return merged


def _merge_entries(base: list[Any], own: list[Any], path: Path) -> list[Any]:
    """Entries of `own` merged over the `base` entry of the same name, or added after them."""
    merged = list(base)
    place = {_label(e): i for i, e in enumerate(base)}
    for entry in own:
        i = place.pop(_label(entry), None)  # once: a second entry of that name is added
        if i is not None and isinstance(entry, dict):
            merged[i] = _lay_over(merged[i], entry)
            continue
        if isinstance(entry, dict) and "kind" not in entry and "name" in entry:
            name = str(entry["name"])
            raise ConfigError(
                f"suite file {path}: entry {name!r} has no kind and overrides no included "
                f"entry{close_match(name, [str(_label(e)) for e in base])}; name an included entry "
                "to override it, or give a new entry its `kind`."
            )
        merged.append(entry)
    return merged


def _relative_to(data: dict[str, Any], source: Path, target: Path) -> dict[str, Any]:
    """Included entries' `surrogate_checkpoint` (relative to their own file) made relative to
    the including file's folder."""
    if source.resolve() == target.resolve():
        return data
    moved = dict(data)
    for table in ENTRY_TABLES:
        entries = []
        for entry in data.get(table) or []:
            checkpoint = entry.get("surrogate_checkpoint") if isinstance(entry, dict) else None
            if isinstance(checkpoint, str) and not Path(checkpoint).expanduser().is_absolute():
                relative = os.path.relpath(source / checkpoint, target)
                entry = {**entry, "surrogate_checkpoint": relative}
            entries.append(entry)
        if table in data:
            moved[table] = entries
    return moved
