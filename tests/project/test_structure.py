"""The code's shape, checked: ruff is clean, and ``app/`` imports at module top, with no cycle, downwards only.

Direction: the core (``app.core`` and ``app.models``) imports nothing above
it; a feature package (every package under ``app/`` that is not a layer
below, so a new one is covered the day it appears) imports no web layer,
admin, login or command module. The root modules (``app``, ``app.config``,
``app.settings``, ``app.templating``, ``app.auditlog``) stand beside them.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
LINTED = ("app", "tests", "bench", "devtools")
CORE = ("app.core", "app.models")
# Packages that are layers, not features: a feature may import the core, never the four above it.
LAYERS = ("app.core", "app.web", "app.admin", "app.auth", "app.cli")
ABOVE_FEATURES = ("app.web", "app.admin", "app.auth", "app.cli")
# (importer, imported): why the rule does not hold there. Empty: move a helper down a layer instead.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def modules() -> dict[str, Path]:
    """Every module of ``app`` by dotted name (a package by its own name)."""
    found = {}
    for path in APP.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, node: ast.Import | ast.ImportFrom, known: set[str]) -> set[str]:
    """The app modules that ``node`` runs: each target and the packages above it, but never ``app`` itself."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
        targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    runs = set()
    for target in targets:
        parts = target.split(".")
        runs.update(".".join(parts[:end]) for end in range(2, len(parts) + 1))
    return {module for module in runs & known if module != name and not name.startswith(module + ".")}


def graph() -> tuple[dict[str, set[str]], list[str]]:
    """The module-level import graph of ``app``, and every import found inside a function."""
    known = modules()
    edges: dict[str, set[str]] = {name: set() for name in known}
    inside = []
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
        nested = {
            id(node)
            for function in functions
            for node in ast.walk(function)
            if isinstance(node, ast.Import | ast.ImportFrom)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                if id(node) in nested:
                    inside.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                else:
                    edges[name] |= imported(name, path, node, set(known))
    return edges, inside


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of module names, or None (a depth-first search)."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = "open"
        stack.append(name)
        for target in sorted(edges[name]):
            if state.get(target) == "open":
                return stack[stack.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[name] = "done"
        stack.pop()
        return None

    for name in sorted(edges):
        if name not in state and (found := visit(name)):
            return found
    return None


def test_ruff_is_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is a test dependency (pyproject.toml)"
    result = subprocess.run([ruff, "check", "--no-cache", *LINTED], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_code_is_formatted_by_ruff():
    """``ruff format`` leaves every file as it is (the formatting commit is in .git-blame-ignore-revs)."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is a test dependency (pyproject.toml)"
    result = subprocess.run(
        [ruff, "format", "--check", "--no-cache", *LINTED], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean_on_app(tmp_path):
    """``[tool.mypy]`` in pyproject.toml says what is checked (``app``) and how."""
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    assert mypy, "mypy is a test dependency (pyproject.toml)"
    # A cache of its own: parallel runs of the suite must not share one.
    result = subprocess.run([mypy, "--cache-dir", str(tmp_path / "mypy")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_import_in_app_is_at_module_top():
    _edges, inside = graph()
    assert inside == []


def test_the_import_graph_of_app_has_no_cycle():
    edges, _inside = graph()
    assert cycle(edges) is None, " -> ".join(cycle(edges))


def test_the_cycle_check_finds_a_cycle_and_passes_a_tree():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_sees_a_package_init_run_by_a_submodule_import():
    edges, _inside = graph()
    assert {"app.notify", "app.notify.settings"} <= edges["app.admin.notifications"]


def area(module: str) -> str:
    """The package or module directly under ``app`` that ``module`` belongs to (``app`` for the package itself)."""
    return ".".join(module.split(".")[:2])


def features(edges: dict[str, set[str]]) -> set[str]:
    """Every package directly under ``app`` that is not a layer: today's feature packages and any new one."""
    packages = {area(name) for name in edges if name.count(".") >= 2 or (APP / name.partition(".")[2]).is_dir()}
    return packages - set(LAYERS) - {"app"}


def wrong_way(edges: dict[str, set[str]]) -> list[str]:
    """Imports against the direction, as ``importer -> imported``, less the listed exceptions."""
    found = []
    for name, targets in sorted(edges.items()):
        if area(name) in CORE:
            bad = {target for target in targets if area(target) not in CORE}
        elif area(name) in features(edges):
            bad = {target for target in targets if area(target) in ABOVE_FEATURES}
        else:
            continue
        found += [f"{name} -> {target}" for target in sorted(bad) if (name, target) not in EXCEPTIONS]
    return found


def test_the_core_and_the_features_import_nothing_above_them():
    edges, _inside = graph()
    assert wrong_way(edges) == []


def test_every_feature_package_is_covered_and_a_new_one_would_be():
    edges, _inside = graph()
    expected = {
        "app.inquiries",
        "app.forms",
        "app.attachments",
        "app.notify",
        "app.replies",
        "app.people",
        "app.cleanup",
    }
    assert expected <= features(edges)
    assert "app.newthing" in features({**edges, "app.newthing.module": set()})


def test_the_direction_check_finds_an_import_upwards():
    edges = {
        "app.core.db": {"app.notify"},
        "app.notify.outbox": {"app.web.public", "app.core.db"},
        "app.notify": set(),
        "app.web.public": {"app.notify"},
        "app.models": set(),
    }
    assert wrong_way(edges) == ["app.core.db -> app.notify", "app.notify.outbox -> app.web.public"]


def test_every_listed_exception_is_still_needed():
    edges, _inside = graph()
    assert all(target in edges.get(name, set()) for name, target in EXCEPTIONS)


def test_the_outbox_reaches_none_of_its_clients():
    """``app.outbox`` sends with the handlers notify and replies register at init: no import leads to them."""
    edges, _inside = graph()
    reached = {name for name in edges if name == "app.outbox" or name.startswith("app.outbox.")}
    frontier = set(reached)
    while frontier:
        frontier = set().union(*(edges[name] for name in frontier)) - reached
        reached |= frontier
    assert reached  # the package is there
    assert not {name for name in reached if name.split(".")[1] in ("notify", "replies")}
