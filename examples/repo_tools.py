"""Two real tools that inspect this repository, and an offline stand-in model that uses them.

Used by ``scripts/demo.sh`` through the command line::

    tooloop run "How big is the loop package?" --tool examples/repo_tools.py:TOOLS

Importing this module also registers the ``offline:`` provider (``--model offline:repo``), so the
demo runs without a key; ``examples/quickstart.py`` uses the same tools from Python.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tooloop import ModelRequest, ModelResponse, ToolCall, ToolCallMessage, register_provider, tool
from tooloop.testing import FunctionModel

ROOT = Path(__file__).resolve().parent.parent


@tool
def list_files(pattern: str) -> list[str]:
    """List files of this repository matching a glob pattern.

    Args:
        pattern: A glob relative to the repository root, e.g. "src/**/*.py".
    """
    return sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(pattern) if p.is_file())[:200]


@tool
def count_lines(paths: list[str]) -> dict[str, int]:
    """Count the lines of some files of this repository.

    Args:
        paths: File paths relative to the repository root.
    """
    counts = {}
    for name in paths:
        path = (ROOT / name).resolve()
        if ROOT not in path.parents:
            raise ValueError(f"{name} is outside the repository")
        counts[name] = len(path.read_text(encoding="utf-8").splitlines())
    return counts


TOOLS = [list_files, count_lines]


def offline_answer(request: ModelRequest) -> ModelResponse:
    """A stand-in model: list the loop's modules, count their lines, read the last commit when a
    ``git_log`` tool (the git MCP server) is offered, then answer from the results."""
    results = [m for m in request.messages if isinstance(m, ToolCallMessage)]
    if not results:
        return ModelResponse(
            "Let me look at the loop's modules.", [ToolCall("1", "list_files", {"pattern": "src/tooloop/loop/*.py"})]
        )
    if len(results) == 1:
        files = json.loads(results[0].content)
        return ModelResponse(tool_calls=[ToolCall("2", "count_lines", {"paths": files})])
    if len(results) == 2 and any(t.name == "git_log" for t in request.tools):
        return ModelResponse(tool_calls=[ToolCall("3", "git_log", {"repo_path": ".", "max_count": 1})])
    counts = json.loads(results[1].content)
    biggest = max(counts, key=counts.get)
    answer = f"The loop is {sum(counts.values())} lines in {len(counts)} modules; the largest is {biggest} "
    answer += f"({counts[biggest]} lines)."
    if len(results) == 3 and results[2].ok:
        message = next((line for line in results[2].content.splitlines() if line.startswith("Message:")), "")
        answer += f" The last commit: {message.removeprefix('Message:').strip() or results[2].content[:80]}"
    return ModelResponse(answer)


def create_offline(model_name: str, **_: Any) -> FunctionModel:
    """Factory of ``offline:...`` model strings: the stand-in model above."""
    return FunctionModel(offline_answer, name=f"offline:{model_name}")


register_provider("offline", create_offline)
