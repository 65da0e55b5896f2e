"""The ACP server is a subpackage on top of the core: nothing in the core imports it or its SDK."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def test_importing_tooloop_does_not_load_the_acp_sdk() -> None:
    code = (
        "import sys, json, tooloop, tooloop.agent, tooloop.loop.run\n"
        "loaded = [m for m in sys.modules if m == 'acp' or m.startswith(('acp.', 'tooloop.acp'))]\n"
        "print(json.dumps(sorted(loaded)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(SRC)}
    )
    assert json.loads(out.stdout) == []


def test_no_core_module_imports_the_acp_package() -> None:
    offenders = []
    for path in (SRC / "tooloop").rglob("*.py"):
        relative = path.relative_to(SRC / "tooloop")
        if relative.parts[0] in ("acp", "cli"):
            continue
        text = path.read_text()
        if "tooloop.acp" in text or "from .acp" in text or "from ..acp" in text or "import acp" in text:
            offenders.append(str(relative))
    assert offenders == []
