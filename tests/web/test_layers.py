"""The web app is a layer on top: the core never imports it, and ``import tooloop`` stays light."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "tooloop"


def _imports(path: Path) -> set[str]:
    """The modules a file imports, relative imports resolved against its package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(SRC).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[: len(base) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_no_module_outside_the_web_package_imports_it() -> None:
    offenders = {
        str(path.relative_to(SRC)): sorted(m for m in _imports(path) if m.startswith("tooloop.web"))
        for path in PACKAGE.rglob("*.py")
        if "web" not in path.relative_to(PACKAGE).parts[:1]
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_import_tooloop_and_its_store_load_no_web_dependency() -> None:
    code = (
        "import sys, json, tooloop, tooloop.store\n"
        "heavy = ('starlette', 'uvicorn', 'jinja2', 'markdown_it', 'playwright')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith('tooloop.web'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_the_import_check_sees_relative_imports() -> None:
    # The check above would be blind if relative imports were not resolved: the web package's own
    # files import each other relatively and must show up as tooloop.web modules.
    assert "tooloop.web._app" in _imports(PACKAGE / "web" / "__init__.py")
