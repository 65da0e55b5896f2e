"""The package's layers, read from the source: who may import whom.

From the bottom: the leaves (values, errors, events, small helpers) import only leaves; the
transport (HTTP, SSE, JSON POST, retries) imports only leaves; the models import only leaves and
the transport; no core module (the leaves, transport, models, tools, store, context, loop, agent)
reaches a subsystem (cli, acp, mcp, config, telemetry, batch, durable, testing, web) in any way:
an import, ``importlib.import_module("...")`` or an import path written as a string
(``"tooloop.config:function"``). Imports under ``if TYPE_CHECKING:`` are for the type checker
only and are left out. The package's ``__init__`` (the facade, which plugs subsystems into the
registries) and ``__main__`` are above everything.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "tooloop"

LEAVES = frozenset(
    {
        "_checks",
        "_deadline",
        "_frozen",
        "_json",
        "_logging",
        "_render",
        "_typeddict",
        "_version",
        "errors",
        "events",
        "messages",
        "outcome",
        "transcript",
    }
)
SUBSYSTEMS = frozenset({"acp", "batch", "cli", "config", "durable", "mcp", "telemetry", "testing", "web"})
ABOVE_ALL = frozenset({"__init__", "__main__"})
_IMPORT_PATH = re.compile(r"tooloop(\.\w+)+(:\w+)?")


def _module(path: Path, root: Path = SRC) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top(module: str) -> str:
    """The first name under ``tooloop`` (``tooloop.models.base`` -> ``models``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _type_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, except those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_only(node):
            yield from (n for child in node.orelse for n in [child, *_nodes(child)])
            continue
        yield node
        yield from _nodes(node)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def imports(path: Path, root: Path = SRC) -> set[str]:
    """The ``tooloop`` modules ``path`` names: imports (relative ones resolved) and import-path strings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = _module(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    docstrings = _docstrings(tree)
    found: set[str] = set()
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if _IMPORT_PATH.fullmatch(node.value):
                found.add(node.value.partition(":")[0])
    return {name for name in found if name == "tooloop" or name.startswith("tooloop.")}


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _layer(module: str) -> str:
    top = _top(module)
    return "leaf" if top in LEAVES else top


def _real(names: set[str]) -> set[str]:
    """Imported names reduced to modules that exist (``from .x import Name`` names ``x``, not ``x.Name``)."""
    real = set()
    for name in names:
        parts = name.split(".")
        while parts and not (
            SRC.parent.joinpath(*parts).with_suffix(".py").is_file() or SRC.parent.joinpath(*parts).is_dir()
        ):
            parts.pop()
        if parts:
            real.add(".".join(parts))
    return real


def _violations(allowed: dict[str, frozenset[str]]) -> list[str]:
    found = []
    for path in _sources():
        module = _module(path)
        layer = _layer(module)
        if layer not in allowed:
            continue
        for name in sorted(_real(imports(path))):
            target = _layer(name)
            if target != layer and target not in allowed[layer] and name != "tooloop":
                found.append(f"{module} ({layer}) -> {name} ({target})")
    return found


def test_leaves_import_only_leaves() -> None:
    assert _violations({"leaf": frozenset()}) == []


def test_the_transport_imports_only_leaves() -> None:
    assert _violations({"transport": frozenset({"leaf"})}) == []


def test_the_models_import_only_leaves_and_the_transport() -> None:
    assert _violations({"models": frozenset({"leaf", "transport"})}) == []


def test_no_core_module_reaches_a_subsystem() -> None:
    layers = {_layer(_module(path)) for path in _sources()}
    core = layers - SUBSYSTEMS - ABOVE_ALL
    assert {"leaf", "transport", "models", "tools", "store", "context", "loop", "agent"} <= core
    allowed = {layer: frozenset(core) for layer in core}
    assert _violations(allowed) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from ..config import load\n", {"tooloop.config", "tooloop.config.load"}),
        ("import importlib\nX = importlib.import_module('tooloop.cli')\n", {"tooloop.cli"}),
        ("TARGET = 'tooloop.testing:create_test_model'\n", {"tooloop.testing"}),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..cli import app\n", set()),
        ('"""See tooloop.config:load for the file."""\n', set()),
    ],
)
def test_the_reader_sees_imports_and_import_path_strings(source: str, expected: set[str], tmp_path: Path) -> None:
    package = tmp_path / "tooloop" / "models"
    package.mkdir(parents=True)
    path = package / "probe.py"
    path.write_text(source, encoding="utf-8")
    assert imports(path, tmp_path / "tooloop") == expected
