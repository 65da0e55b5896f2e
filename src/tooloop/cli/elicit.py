"""A server's questions to the user (MCP elicitation), asked field by field on the terminal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..mcp import Elicitation, ElicitationAnswer
from .terminal import Terminal
from .view import on_screen

__all__ = ["ask_on_terminal"]


async def ask_on_terminal(question: Elicitation) -> ElicitationAnswer:
    """Ask on the terminal (standard input, or the terminal when input is a pipe); with no
    terminal the question is declined, and said so. An empty answer, end of input or Ctrl-C cancels."""
    from .run import terminal_asker

    term = Terminal()
    ask = terminal_asker(term)
    if ask is None:
        term.err.print(
            f"MCP server {question.server!r} asks: {question.message}\n"
            "  declined: no terminal to answer on (run the command in a terminal to answer)",
            markup=False,
        )
        return ElicitationAnswer("decline")
    view = on_screen()
    if view is not None:
        view.hold()
    try:
        return await _ask(ask, term, question)
    finally:
        if view is not None:
            view.end_question()


async def _ask(ask: Any, term: Terminal, question: Elicitation) -> ElicitationAnswer:
    term.err.print(f"MCP server {question.server!r} asks: {question.message}", markup=False)
    try:
        if question.url is not None:
            line = await ask(f"  open {question.url} ? [y]es / [n]o: ")
            return ElicitationAnswer("accept" if (line or "").strip().lower() in ("y", "yes") else "decline")
        content: dict[str, Any] = {}
        properties: Mapping[str, Any] = (question.schema or {}).get("properties", {})
        required = set((question.schema or {}).get("required", ()))
        for name, field in properties.items():
            value = await _field(ask, term, name, field, name in required)
            if value is _CANCEL:
                return ElicitationAnswer("cancel")
            if value is not None:
                content[name] = value
    except KeyboardInterrupt:
        return ElicitationAnswer("cancel")
    return ElicitationAnswer("accept", content)


_CANCEL = object()


async def _field(ask: Any, term: Terminal, name: str, field: Mapping[str, Any], required: bool) -> Any:
    kind = field.get("type", "string")
    choices = field.get("enum")
    hint = f" ({'/'.join(map(str, choices))})" if choices else f" ({kind})" if kind != "string" else ""
    label = f"  {field.get('title') or name}{hint}{'' if required else ', Enter to skip'}: "
    while True:
        line = await ask(label)
        if line is None:
            return _CANCEL
        text = line.strip()
        if not text:
            if required:
                return _CANCEL
            return None
        try:
            value = _coerce(text, kind)
        except ValueError:
            term.err.print(f"  {name} must be a {kind}", markup=False)
            continue
        if choices and value not in choices:
            term.err.print(f"  {name} must be one of {', '.join(map(str, choices))}", markup=False)
            continue
        return value


def _coerce(text: str, kind: str) -> Any:
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text)
    if kind == "boolean":
        if text.lower() in ("y", "yes", "true"):
            return True
        if text.lower() in ("n", "no", "false"):
            return False
        raise ValueError(text)
    return text
