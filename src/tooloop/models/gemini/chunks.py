"""The fields of a Gemini ``GenerateContentResponse`` that tooloop reads, as typed records.

A plain answer and every chunk of a stream carry the same envelope (usage with its per-modality
details, the model version, the response id, the candidate's role and index); decoding them into
dicts builds every key and value of it and a dozen containers per chunk. ``msgspec`` decodes
straight into these records, skips the fields nobody reads and allocates nothing the garbage
collector has to scan (``gc=False``: a record holds only strings, numbers, lists of records and
the call's arguments, never itself). Answers that arrive as dicts (from the SDK, or kept for a
payload listener) are converted with :func:`chunk_from`, so one reader handles every path.

Any field may be missing or null, numbers and strings are coerced (``strict=False``) and unknown
fields are ignored; JSON of another shape raises ``msgspec.ValidationError`` (a ``ValueError``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...transport.client import loads

__all__ = [
    "Candidate",
    "Chunk",
    "ChunkShapeError",
    "Content",
    "Feedback",
    "FunctionCall",
    "Part",
    "UsageMetadata",
    "chunk_from",
    "decode",
    "decode_each",
    "read_one",
]


class FunctionCall(msgspec.Struct, gc=False):
    """A part's ``functionCall``: Gemini 3 may give it an ``id``, older models do not."""

    name: str | None = None
    args: dict[str, Any] | None = None
    id: str | None = None


class Part(msgspec.Struct, gc=False):
    """One part of a candidate's content: text, a thought, or a function call (other kinds are left out)."""

    text: str | None = None
    thought: bool | None = None
    thoughtSignature: str | None = None
    functionCall: FunctionCall | None = None


class Content(msgspec.Struct, gc=False):
    """A candidate's ``content``."""

    parts: list[Part] | None = None


class Candidate(msgspec.Struct, gc=False):
    """One candidate (tooloop asks for one, and reads the first)."""

    content: Content | None = None
    finishReason: str | None = None
    finishMessage: str | None = None


class UsageMetadata(msgspec.Struct, gc=False):
    """The token counts tooloop reads of ``usageMetadata``."""

    promptTokenCount: int | None = None
    candidatesTokenCount: int | None = None
    toolUsePromptTokenCount: int | None = None
    cachedContentTokenCount: int | None = None
    thoughtsTokenCount: int | None = None


class Feedback(msgspec.Struct, gc=False):
    """``promptFeedback``: set when the prompt itself was blocked."""

    blockReason: str | None = None
    blockReasonMessage: str | None = None


class Chunk(msgspec.Struct, gc=False):
    """A plain answer or one chunk of a stream, or an error event (``error`` set) sent instead."""

    candidates: list[Candidate] | None = None
    usageMetadata: UsageMetadata | None = None
    modelVersion: str | None = None
    responseId: str | None = None
    promptFeedback: Feedback | None = None
    error: Any = None


ChunkShapeError = msgspec.ValidationError
"""Raised for JSON that is not an answer in Gemini's shape (a ``ValueError``)."""

_many = msgspec.json.Decoder(list[Chunk], strict=False)
_one = msgspec.json.Decoder(Chunk, strict=False)

decode = _many.decode
"""The chunks of a JSON array of chunks (raises ``msgspec.DecodeError``, a ``ValueError``)."""

decode_each = _one.decode
"""One chunk (or a plain answer) from its JSON text."""


def chunk_from(data: Any) -> Chunk:
    """The chunk for JSON already decoded (a dict); raises :data:`ChunkShapeError` when it is not one."""
    return msgspec.convert(data, Chunk, strict=False)


def read_one(data: bytes) -> Chunk:
    """One chunk from its JSON text, whatever the fast decoder refuses and the transport's
    :func:`~tooloop.transport.client.loads` reads (a lone surrogate escape, ``NaN``) read too."""
    try:
        return decode_each(data)
    except ValueError:
        return chunk_from(loads(data))
