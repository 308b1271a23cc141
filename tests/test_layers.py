"""The package's layers only point down: request -> adapter -> job -> partitions -> backend -> proof.

Every ``cuzk_plugin`` import (lazy ones inside functions and ``TYPE_CHECKING`` ones too) is read
from the source with ``ast``; an import from a lower layer into a higher one, a cycle between
top-level packages, two modules that import each other, or a production module that imports a
test fixture fails with the importing module and line.

Test fixtures (the sealers, the sparse tree) live in ``cuzk_plugin/filecoin/fixtures/``. The rule:
no module of ``cuzk_plugin`` outside that folder imports it, not even lazily; tests, ``bench/``
and ``tools/`` may (a command that needs a sealer runs it as ``python -m
cuzk_plugin.filecoin.fixtures.<sealer>``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "cuzk_plugin"
#: Test data made by the sealers: never imported by production code.
FIXTURES = "cuzk_plugin.filecoin.fixtures"

#: Top to bottom; a module may import its own layer's package and anything below it.
LAYERS: list[set[str]] = [
    {"cli"},
    {"server", "demo"},
    {"adapters"},
    {"engine"},
    {"groth16"},
    {"filecoin"},
    {"circuit"},
    {"backends"},
    {"formats"},
    {"bls12_381"},
    {"errors", "config"},
]
RANK = {name: depth for depth, names in enumerate(LAYERS) for name in names}


def _imports(path: Path):
    """(line, imported top-level package) for every cuzk_plugin import in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names] if node.module == "cuzk_plugin" else [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "cuzk_plugin" and len(parts) > 1:
                yield node.lineno, parts[1]


def _package_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _edges():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "proto" in path.parts:  # generated gRPC stubs
            continue
        src = _package_of(path)
        if src == "__init__":
            continue
        for line, dst in _imports(path):
            if dst != src:
                yield path.relative_to(PACKAGE.parent), line, src, dst


def test_every_package_has_a_layer() -> None:
    packages = {p.name.removesuffix(".py") for p in PACKAGE.iterdir()
                if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__init__.py")}
    assert packages - set(RANK) == set(), "give the new package a layer in tests/test_layers.py"


def test_imports_point_down() -> None:
    upward = [f"{where}:{line}: {src} imports {dst}" for where, line, src, dst in _edges()
              if RANK.get(dst, len(LAYERS)) < RANK[src]]
    assert not upward, "imports from a lower layer into a higher one:\n" + "\n".join(upward)


def test_no_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for _where, _line, src, dst in _edges():
        graph.setdefault(src, set()).add(dst)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})) for nxt in graph.get(start, ()))

    cycles = sorted(p for p in graph if reaches(p, p, {p}))
    assert not cycles, f"packages on an import cycle: {cycles}"


@pytest.mark.parametrize("src,dst", [("backends", "groth16"), ("filecoin", "adapters"), ("server", "cli")])
def test_the_check_sees_an_upward_import(tmp_path: Path, src: str, dst: str) -> None:
    """The rule itself: a planted upward import is one the ranks refuse."""
    planted = tmp_path / "m.py"
    planted.write_text(f"def f():\n    from cuzk_plugin.{dst} import x\n")
    [(line, got)] = list(_imports(planted))
    assert (line, got) == (2, dst) and RANK[got] < RANK[src]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _module_imports(path: Path, known: dict[str, Path]):
    """(line, imported module) for every cuzk_plugin import in ``path``: ``from a.b import c``
    names module ``a.b.c`` where that is a module, else ``a.b``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                yield node.lineno, full if full in known else node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def _module_edges() -> dict[str, dict[str, int]]:
    """importing module -> {imported module: first line}, over cuzk_plugin's modules."""
    known = _modules()
    edges: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        for line, dst in _module_imports(path, known):
            while dst and dst not in known:  # an attribute of a module: the module
                dst = dst.rpartition(".")[0]
            if dst and dst != name:
                edges.setdefault(name, {}).setdefault(dst, line)
    return edges


def _circles(edges: dict[str, dict[str, int]]) -> list[str]:
    return sorted(f"{a} (line {edges[a][b]}) <-> {b} (line {edges[b][a]})"
                  for a in edges for b in edges[a] if a < b and a in edges.get(b, {}))


def test_no_two_modules_import_each_other() -> None:
    """No file imports a file that imports it (a lazy import counts: the circle is there)."""
    circles = _circles(_module_edges())
    assert not circles, "modules that import each other (move what both need into a third, below both):\n" + \
        "\n".join(circles)


def _fixture_imports(edges: dict[str, dict[str, int]], fixtures: str) -> list[str]:
    def is_fixture(m: str) -> bool:
        return m == fixtures or m.startswith(fixtures + ".")

    return sorted(f"{src} (line {line}) imports {dst}" for src, dsts in edges.items() if not is_fixture(src)
                  for dst, line in dsts.items() if is_fixture(dst))


def test_production_never_imports_a_fixture() -> None:
    """The sealers and the sparse tree are test data: tests, benches and tools import them,
    no module of the package outside ``filecoin/fixtures/``."""
    found = _fixture_imports(_module_edges(), FIXTURES)
    assert not found, "production modules that import a test fixture:\n" + "\n".join(found)


def test_the_checks_see_a_circle_and_a_fixture_import() -> None:
    """The rules themselves, on planted edges: a lazy import back is a circle, and an import
    of a fixture from outside the fixtures is refused."""
    edges = {"cuzk_plugin.a": {"cuzk_plugin.b": 3}, "cuzk_plugin.b": {"cuzk_plugin.a": 9},
             "cuzk_plugin.engine.x": {FIXTURES + ".seal": 5}, FIXTURES + ".seal": {FIXTURES + ".sparse_tree": 2}}
    assert _circles(edges) == ["cuzk_plugin.a (line 3) <-> cuzk_plugin.b (line 9)"]
    assert _fixture_imports(edges, FIXTURES) == [f"cuzk_plugin.engine.x (line 5) imports {FIXTURES}.seal"]
