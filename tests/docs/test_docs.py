"""Every ```python block of README.md and docs/*.md runs here, so the documentation cannot rot.

A block runs on its own, in a fresh namespace and a temporary working directory, with top-level
``await`` allowed; it must work offline (``"test:echo"``, ``tooloop.testing``). A block that needs
a real key or server is marked by the line ``<!-- docs-test: compile-only -->`` right before its
fence: it is compiled but not run. Every block, run or not, is also type-checked with mypy.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- docs-test: compile-only -->"
FENCE = re.compile(r"^```python[ \t]*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    code: str
    compile_only: bool

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The ```python blocks of a Markdown file, with the line each starts on."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        if FENCE.match(lines[index]):
            start = index + 1
            end = start
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            marked = index > 0 and lines[index - 1].strip() == MARKER
            found.append(Block(path, start + 1, "\n".join(lines[start:end]) + "\n", marked))
            index = end
        index += 1
    return found


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


BLOCKS = [block for path in documents() for block in blocks_of(path)]


def compiled(block: Block) -> object:
    return compile(block.code, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def test_the_collector_finds_blocks_and_markers(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n```python\nprint(1)\n```\n\n<!-- docs-test: compile-only -->\n"
        "```python\nawait x()\n```\n```bash\nls\n```\n"
    )
    assert [(b.line, b.code, b.compile_only) for b in blocks_of(doc)] == [
        (3, "print(1)\n", False),
        (8, "await x()\n", True),
    ]
    assert len(BLOCKS) >= 15


@pytest.fixture(autouse=True)
def registries_restored() -> Iterator[None]:
    """A document's example registers providers and model configurations for itself only."""
    from tooloop.models import registry

    providers, configs, sources = dict(registry._PROVIDERS), dict(registry._CONFIGS), list(registry._SOURCES)
    yield
    registry._PROVIDERS.clear()
    registry._PROVIDERS.update(providers)
    registry._CONFIGS.clear()
    registry._CONFIGS.update(configs)
    registry._SOURCES[:] = sources


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = compiled(block)  # every block compiles, compile-only ones too
    if block.compile_only:
        return
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "TOOLOOP_STORE"):
        monkeypatch.delenv(name, raising=False)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    if inspect.CO_COROUTINE & code.co_flags:  # type: ignore[attr-defined]
        asyncio.run(asyncio.wait_for(eval(code, namespace), 60))
    else:
        exec(code, namespace)


def type_errors(blocks: list[Block], tmp_path: Path) -> list[str]:
    """mypy's errors for ``blocks``, each placed at its line in its document."""
    from mypy import api

    for number, block in enumerate(blocks):
        body = textwrap.indent(block.code, "    ")
        source = f"# {block.id}\nasync def __block__() -> None:\n{body}    pass\n"
        (tmp_path / f"block_{number}.py").write_text(source, encoding="utf-8")
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n", encoding="utf-8")  # not the project's strict settings: docs are examples
    report, errors, _ = api.run(
        [
            str(tmp_path),
            f"--config-file={config}",
            "--python-version=3.11",
            "--check-untyped-defs",
            "--disable-error-code=empty-body",
            "--ignore-missing-imports",
            "--no-error-summary",
            f"--cache-dir={tmp_path / '.mypy_cache'}",
            "--hide-error-context",
        ]
    )
    located = []
    for line in (report + errors).splitlines():
        match = re.match(r".*block_(\d+)\.py:(\d+): (.*)", line)
        if match:
            block = blocks[int(match.group(1))]
            located.append(f"{block.id.rsplit(':', 1)[0]}:{block.line + int(match.group(2)) - 3}: {match.group(3)}")
        elif line.strip():
            located.append(line)
    return located


def test_every_block_type_checks(tmp_path: Path) -> None:
    errors = type_errors(BLOCKS, tmp_path)
    assert errors == [], "\n".join(errors)


def test_the_type_check_catches_a_wrong_block(tmp_path: Path) -> None:
    wrong = Block(
        ROOT / "docs" / "example.md", 10, 'from tooloop import Agent\n\nAgent("test:echo").run_sync(42)\n', True
    )
    errors = type_errors([wrong], tmp_path)
    assert len(errors) == 1 and errors[0].startswith('docs/example.md:12: error: Argument 1 to "run_sync"')
