"""The tree keeps its shape: one import direction between the parts, and a command line that
answers without importing torch.

Layers, lowest first: _core < results < data < models < perturbations, diagnostics < tasks <
evaluation, training < cli, registry. A module may import its own part and any lower layer;
importing a higher layer (upward) or another part of the same layer (sideways) fails this test.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "robench"

RANKS = {
    "_core": 0,
    "results": 1,
    "data": 2,
    "models": 3,
    "perturbations": 4,
    "diagnostics": 4,
    "tasks": 5,
    "evaluation": 6,
    "training": 6,
    "cli": 7,
    "api": 7,
    "registry": 7,  # the plugins' front door (robench.registry): nothing inside imports it
}


# The rooms of `results/`, lowest first: a room imports its own room and lower ones only.
RESULTS_ROOMS = {"report": 0, "stats": 1, "gate": 2, "plots": 2, "compare": 3}
# Deprecated aliases of moved modules, kept for one version (they import their new home).
ALIASES = {"results/metrics.py", "models/plugins.py"}


def _room(module: str) -> str | None:
    """`robench.results.gate.checks` -> "gate"; None outside results' rooms."""
    parts = module.split(".")
    if len(parts) > 2 and parts[:2] == ["robench", "results"] and parts[2] in RESULTS_ROOMS:
        return parts[2]
    return None


def _part(module: str) -> str | None:
    """`robench.results.gate.regression` -> "results"; None for the package root itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "robench" else None


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in (
        "TYPE_CHECKING",
        "typing.TYPE_CHECKING",
    )


def _imports(path: Path, *, at_run_time: bool = False) -> list[str]:
    """The robench modules `path` imports; `at_run_time`: not those only type checkers see
    (`if TYPE_CHECKING:` blocks at the top level)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    if at_run_time:
        tree.body = [node for node in tree.body if not _is_type_checking_block(node)]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "robench":
                found += [f"robench.{alias.name}" for alias in node.names]
            else:
                found.append(node.module)
    return [name for name in found if name.startswith("robench")]


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE)


def test_every_part_is_a_ranked_subpackage_with_a_docstring() -> None:
    parts = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert parts <= set(RANKS), f"unranked parts: {parts - set(RANKS)}"
    for part in parts:
        init = PACKAGE / part / "__init__.py"
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init} has no docstring"
    top_level = {p.stem for p in PACKAGE.glob("*.py")}
    assert top_level == {"__init__", "__main__"}, top_level


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path: Path) -> None:
    own = path.relative_to(PACKAGE).parts[0]
    for name in _imports(path):
        target = _part(name)
        if target is None or target == own:
            continue
        assert target in RANKS, f"{path}: imports {name}, an unranked part"
        assert RANKS[target] < RANKS[own], (
            f"{path} ({own}, layer {RANKS[own]}) imports {name} ({target}, layer "
            f"{RANKS[target]}): imports must point to a lower layer"
        )


def test_the_package_root_imports_only_the_core() -> None:
    for name in _imports(PACKAGE / "__init__.py", at_run_time=True):
        assert _part(name) in (None, "_core"), name


def test_the_package_roots_type_checking_imports_are_its_lazy_exports() -> None:
    """Type checkers see `robench.X` through the `if TYPE_CHECKING:` block; at run time
    `__getattr__` imports it from `_LAZY`. Both must name the same objects."""
    import importlib

    import robench

    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    (block,) = [node for node in tree.body if _is_type_checking_block(node)]
    seen = {}
    for node in ast.walk(block):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                assert alias.asname == alias.name, "re-export as `import X as X`"
                seen[alias.name] = getattr(importlib.import_module(node.module), alias.name)
    assert set(seen) == set(robench._LAZY)
    assert set(robench.__all__) == {*robench._LAZY, "__version__"}
    for name, obj in seen.items():
        assert getattr(robench, name) is obj, name


HEAVY = (
    "torch",
    "torchvision",
    "timm",
    "torchattacks",
    "pyautoattack",
    "imagecorruptions",
    "pandas",
    "matplotlib",
)
REPORTS = Path(__file__).resolve().parents[1] / "reports" / "demo"
CARDS = Path(__file__).resolve().parents[1] / "models"
LIGHT_COMMANDS = [
    ["--help"],
    ["--version"],
    ["eval", "--help"],  # drawn from the options' table (robench/evaluation/options/__init__.py)
    ["list", "suites"],
    ["list", "perturbations"],
    ["list", "metrics"],
    ["list", "formats"],
    ["schema"],
    ["validate", "smoke", "demo"],
    ["validate", str(CARDS / "vit_nano_elliptical_fmnist.toml")],  # a card: sha256, architecture
    ["compare", str(REPORTS / "baseline.json"), str(REPORTS / "elliptical.json")],
    ["gate", "-b", str(REPORTS / "baseline.json"), "-c", str(REPORTS / "baseline.json")],
    ["gate", "--help"],  # --output's help names the gate formats: their module is loaded
]

_PROBE = """
import json, sys
sys.argv = ["robench", *json.loads(sys.argv[1])]
from robench.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _modules_imported_by(argv: list[str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argv)], capture_output=True, text=True
    )
    result = json.loads(done.stderr.strip().splitlines()[-1])
    assert result["code"] in (0, None), done.stderr
    return list(result["modules"])


@pytest.mark.parametrize("argv", LIGHT_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_light_commands_import_no_torch(argv: list[str]) -> None:
    modules = _modules_imported_by(argv)
    loaded = [name for name in HEAVY if name in modules]
    assert loaded == [], f"robench {' '.join(argv)} imported {loaded}"


# What `robench --help` and `--version` must not import: the numerics and the report models
# (the commands' business), typer's help renderer with rich.markdown, and any command module.
NOT_FOR_HELP = (
    "numpy",
    "pydantic",
    "rich.markdown",
    "rich.traceback",
    "typer.rich_utils",
    "robench.results.report.schema",
    "robench.results.stats.metrics",
)


@pytest.mark.parametrize("argv", [["--help"], ["--version"]], ids=str)
def test_help_and_version_import_no_command(argv: list[str]) -> None:
    from robench.cli._commands import COMMANDS

    modules = _modules_imported_by(argv)
    loaded = [name for name in (*HEAVY, *NOT_FOR_HELP) if name in modules]
    assert loaded == [], f"robench {' '.join(argv)} imported {loaded}"
    commands = [spec.module for spec in COMMANDS.values() if spec.module in modules]
    assert commands == [], f"robench {' '.join(argv)} imported {commands}"


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", str(REPORTS / "baseline.json"), str(REPORTS / "elliptical.json")],
        ["gate", "-b", str(REPORTS / "baseline.json"), "-c", str(REPORTS / "elliptical.json")],
    ],
    ids=lambda a: a[0],
)
def test_compare_and_a_binary_gate_read_reports_without_numpy(argv: list[str]) -> None:
    # numpy is a fifth of their start-up; they read numbers and count pairs.
    assert "numpy" not in _modules_imported_by(argv)


def test_a_command_imports_its_own_module_only() -> None:
    from robench.cli._commands import COMMANDS

    modules = _modules_imported_by(["schema"])
    assert [s.module for s in COMMANDS.values() if s.module in modules] == ["robench.cli.schema"]


def test_results_rooms_import_in_one_direction() -> None:
    results = PACKAGE / "results"
    rooms = {p.name for p in results.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert rooms == set(RESULTS_ROOMS), f"unranked rooms of results/: {rooms ^ set(RESULTS_ROOMS)}"
    flat = {p.name for p in results.glob("*.py")} - {"__init__.py"}
    assert {f"results/{n}" for n in flat} <= ALIASES, f"modules outside a room: {flat}"
    for path in sorted(results.rglob("*.py")):
        rel = path.relative_to(results)
        if len(rel.parts) < 2:
            continue
        own = rel.parts[0]
        for name in _imports(path):
            room = _room(name)
            if room is None or room == own:
                continue
            assert RESULTS_ROOMS[room] < RESULTS_ROOMS[own], (
                f"{path} (results/{own}) imports {name} (results/{room}): a room imports "
                "only lower rooms (report < stats < gate, plots < compare)"
            )


def _module_name(path: Path) -> str:
    """robench/evaluation/sanity/checks.py -> robench.evaluation.sanity.checks."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the robench modules it imports, as the code reads: imports inside functions
    and under TYPE_CHECKING count, and `from robench.x import y` names the module x.y too
    when y is one (a package's face and its submodule are both imported)."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        found = set(_imports(path))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found |= {f"{node.module}.{alias.name}" for alias in node.names}
        graph[module] = {name for name in found if name in paths and name != module}
    return graph


def test_no_import_circle_anywhere() -> None:
    """No two modules of robench import each other, directly or through others: each module
    stands above everything it imports, so it can be read (and moved) without what uses it."""
    cycles = _cycles(_import_graph())
    assert not cycles, f"import circles: {cycles}"


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


MAX_MODULES = 20  # STYLE.md: a folder of more modules is several concerns


def test_no_folder_holds_more_than_20_modules() -> None:
    """A folder's modules are its .py files other than `__init__.py` (the package's face);
    a subpackage is a room of its own and counts in its own folder."""
    crowded = {}
    for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir())]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES:
            crowded[str(folder.relative_to(PACKAGE.parent))] = len(modules)
    assert not crowded, (
        f"folders of more than {MAX_MODULES} modules: give a concern a subpackage: {crowded}"
    )


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
