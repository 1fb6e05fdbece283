"""The attack classes of the installed torchattacks, read from its source without importing it
(which imports torch): the names in `torchattacks.__all__`, each class's `__init__` parameters
and defaults, and whether it supports "targeted". The adapter checks them against the imported
class's signature at run time. A default that is not a plain literal (`attack_class=BIM`) is
kept as its source text (`Unreadable`): such a parameter cannot be written in a TOML suite.
"""

from __future__ import annotations

import ast
import importlib.util
import logging
import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

PACKAGE = "torchattacks"
# Arithmetic allowed in a default (`8/255`, `2 * 0.1`, `-1`): what torchattacks writes.
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


@dataclass(frozen=True)
class Unreadable:
    """A default that is not a literal: only its source text is known."""

    source: str

    def __repr__(self) -> str:
        return self.source


@dataclass(frozen=True)
class LibraryParameter:
    """One `__init__` parameter of an attack class (after `self` and `model`)."""

    name: str
    default: Any  # the literal default; `REQUIRED` when there is none
    variadic: bool = False  # `*args` or `**kwargs`

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


REQUIRED: Any = Unreadable("<required>")


@dataclass(frozen=True)
class LibraryAttack:
    name: str  # the class name, as in `torchattacks.__all__` ("CW", "MIFGSM")
    takes_model: bool  # the first parameter after self is `model`
    parameters: tuple[LibraryParameter, ...]
    # "targeted" in its `supported_mode` and its code asks for target labels: SPSA lists the
    # mode but never asks, so it would attack towards the true label: not targeted.
    targeted: bool


def _literal(node: ast.expr) -> Any:
    """The value of a literal default, or `Unreadable` with its source text."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _literal(node.left), _literal(node.right)
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (left, right)):
            return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _literal(node.operand)
        if isinstance(value, int | float):
            return -value
    return Unreadable(ast.unparse(node))


def _parameters(init: ast.FunctionDef) -> tuple[bool, tuple[LibraryParameter, ...]]:
    """(whether `model` comes first, the parameters after it) of an `__init__`."""
    args = init.args
    positional = [*args.posonlyargs, *args.args][1:]  # without self
    defaults: list[Any] = [REQUIRED] * (len(positional) - len(args.defaults))
    defaults += [_literal(d) for d in args.defaults]
    named = list(zip((a.arg for a in positional), defaults, strict=True))
    named += [
        (a.arg, REQUIRED if d is None else _literal(d))
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    takes_model = bool(named) and named[0][0] == "model"
    found = [LibraryParameter(n, d) for n, d in named[1 if takes_model else 0 :]]
    found += [LibraryParameter(a.arg, REQUIRED, True) for a in (args.vararg, args.kwarg) if a]
    return takes_model, tuple(found)


def _supports_targeted(init: ast.FunctionDef) -> bool:
    """Whether `__init__` sets `self.supported_mode` to a list holding "targeted"."""
    for node in ast.walk(init):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == "supported_mode":
                value = _literal(node.value)
                return isinstance(value, list | tuple) and "targeted" in value
    return False


def _asks_for_targets(cls: ast.ClassDef) -> bool:
    """Whether the class calls `self.get_target_label` anywhere."""
    return any(
        isinstance(node, ast.Attribute) and node.attr == "get_target_label"
        for node in ast.walk(cls)
    )


def _read_class(path: Path, name: str) -> LibraryAttack | None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    takes_model, parameters = _parameters(item)
                    targeted = _supports_targeted(item) and _asks_for_targets(node)
                    return LibraryAttack(name, takes_model, parameters, targeted)
    return None


def package_dir() -> Path | None:
    """The installed torchattacks package folder (found without importing it), or None."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@cache
def library_attacks() -> dict[str, LibraryAttack | None]:
    """Every name in torchattacks' `__all__` -> its class as declared in source (None: not
    found, a re-export it cannot follow); empty when torchattacks is not installed."""
    root = package_dir()
    if root is None:
        logger.debug("torchattacks is not installed: no torchattacks.* kinds")
        return {}
    init = ast.parse((root / "__init__.py").read_text(encoding="utf-8"))
    names: list[str] = []
    modules: dict[str, Path] = {}
    for node in init.body:  # `__all__ = [...]`, `from .attacks.cw import CW`
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]:
            names = list(_literal(node.value))
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            path = root.joinpath(*node.module.split(".")).with_suffix(".py")
            modules.update({alias.asname or alias.name: path for alias in node.names})
    return {
        name: _read_class(modules[name], name)
        if name in modules and modules[name].is_file()
        else None
        for name in names
    }
