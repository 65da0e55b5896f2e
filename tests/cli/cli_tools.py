"""Tools the command-line tests load with ``--tool tests/cli/cli_tools.py:TOOLS`` (a file path)."""

from __future__ import annotations

from pathlib import Path

from tooloop import Agent, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails.

    Args:
        reason: What to say.
    """
    raise ValueError(f"exploded: {reason}")


@tool(requires_approval=True)
def remove_file(path: str) -> str:
    """Delete a file (needs approval).

    Args:
        path: The file to delete.
    """
    Path(path).unlink()
    return f"deleted {path}"


@tool
def long_text(size: int) -> str:
    """A long result.

    Args:
        size: How many characters.
    """
    return "x" * size


TOOLS = [add, explode, remove_file, long_text]

# A subagent whose file removals are asked about at the chat's prompt (``--tool ...:HELPER``).
HELPER = [Agent("openai:gpt-4.1-mini", tools=[remove_file]).as_tool(name="helper", description="Tidies files up.")]
