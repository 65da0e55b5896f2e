"""Reasoning that Chat Completions servers send outside ``reasoning_content``, and how it goes back.

Two shapes, both read on the plain and the streamed path:

* ``content`` as a list of typed chunks (Mistral's reasoning models): ``{"type": "thinking",
  "thinking": [{"type": "text", "text": ...}], "signature": ...}`` and ``{"type": "text", "text":
  ...}``; other chunk types (references) carry no text. The thinking goes back as the same chunks
  at the head of the assistant turn's content (``reasoning_field="content"``).
* ``reasoning_details`` (OpenRouter's format, also Snowflake Cortex for Claude): blocks typed
  ``reasoning.text`` (``text``, ``signature``), ``reasoning.summary`` (``summary``) or
  ``reasoning.encrypted`` (``data``), each with an ``index``; streamed, a block comes in pieces
  that share its index. They are kept whole (merged) in ``provider_data`` and go back verbatim:
  a signed chain of thought is verified when it comes back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...messages import ThinkingPart

__all__ = [
    "DETAILS",
    "Details",
    "content_chunks",
    "details_text",
    "part_fields",
    "split_content",
    "thinking_text",
]

DETAILS = "reasoning_details"
"""The key of the blocks, on the wire and in a response's ``provider_data[provider]``."""

_JOINED = ("text", "summary", "data")
"""The fields of a block whose streamed pieces are joined; the others take the latest value."""


def part_fields(part: Any) -> tuple[Any, Any, Any, Any]:
    """``(type, text, thinking, signature)`` of a content chunk, a dict or a decoded record."""
    if isinstance(part, Mapping):
        return part.get("type"), part.get("text"), part.get("thinking"), part.get("signature")
    return part.type, part.text, part.thinking, part.signature


def thinking_text(thinking: Any) -> str:
    """The text of a thinking chunk's ``thinking``: a list of text chunks (or, leniently, a string)."""
    if isinstance(thinking, str):
        return thinking
    if not isinstance(thinking, list):
        return ""
    pieces = []
    for inner in thinking:
        if isinstance(inner, Mapping) and isinstance(inner.get("text"), str):
            pieces.append(inner["text"])
        elif isinstance(inner, str):
            pieces.append(inner)
    return "".join(pieces)


def split_content(parts: Iterable[Any]) -> tuple[str, str, str | None]:
    """``(text, thinking, signature)`` of a content list."""
    text: list[str] = []
    thinking: list[str] = []
    signature = None
    for part in parts:
        kind, value, inner, signed = part_fields(part)
        if kind == "thinking":
            thinking.append(thinking_text(inner))
            signature = signed or signature
        elif isinstance(value, str) and kind in (None, "text"):
            text.append(value)
    return "".join(text), "".join(thinking), signature


def content_chunks(thinking: Sequence[ThinkingPart], text: str | None) -> list[dict[str, Any]]:
    """An assistant turn's content as chunks: its thinking first, then its text."""
    chunks: list[dict[str, Any]] = []
    for part in thinking:
        chunk: dict[str, Any] = {"type": "thinking", "thinking": [{"type": "text", "text": part.text}]}
        if part.signature:
            chunk["signature"] = part.signature
        chunks.append(chunk)
    if text:
        chunks.append({"type": "text", "text": text})
    return chunks


def details_text(details: Iterable[Any]) -> str:
    """The readable reasoning in blocks: their ``text`` or ``summary`` (encrypted blocks have none)."""
    pieces = []
    for block in details:
        if isinstance(block, Mapping):
            value = block.get("text") or block.get("summary")
            if isinstance(value, str):
                pieces.append(value)
    return "".join(pieces)


class Details:
    """Blocks of ``reasoning_details`` gathered from stream pieces, merged by ``index``, in order."""

    __slots__ = ("_blocks",)

    def __init__(self) -> None:
        self._blocks: dict[object, dict[str, Any]] = {}

    def add(self, pieces: Iterable[Any]) -> None:
        """Merge one delta's blocks (pieces without an index are blocks of their own)."""
        for piece in pieces:
            if not isinstance(piece, Mapping):
                continue
            key = piece.get("index")
            if key is None:
                key = object()
            block = self._blocks.setdefault(key, {})
            for name, value in piece.items():
                if name in _JOINED and isinstance(value, str) and isinstance(block.get(name), str):
                    block[name] += value
                elif value is not None:
                    block[name] = value

    def blocks(self) -> list[dict[str, Any]]:
        """The merged blocks, in the order their first piece arrived."""
        return list(self._blocks.values())
