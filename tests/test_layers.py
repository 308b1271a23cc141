"""The package's layers only point down: request -> adapter -> job -> partitions -> backend -> proof.

Every ``cuzk_plugin`` import (lazy ones inside functions too) is read from the source with
``ast``; an import from a lower layer into a higher one, or a cycle between top-level packages,
fails with the importing module and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "cuzk_plugin"

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
