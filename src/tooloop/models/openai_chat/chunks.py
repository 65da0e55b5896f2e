"""The fields of a streamed ``chat.completion.chunk`` that tooloop reads, as typed records.

A streamed answer is a dozen or more chunks per tool call, each repeating the same envelope (id,
object, created, model, system fingerprint, log probabilities). Decoding them into dicts builds
every key and value of that envelope and seven containers per chunk; ``msgspec`` decodes straight
into these records, skips the fields nobody reads and allocates nothing the garbage collector has
to scan (``gc=False``: a record holds only strings, numbers and lists, never itself). Chunks that
arrive as dicts (from the SDK, or kept for a payload listener) are converted with :func:`chunk_from`,
so one reader handles every path.

The records are lenient where servers differ: any field may be missing or null, numbers and
strings are coerced (``strict=False``), ``arguments`` may be an object instead of a string,
and unknown fields are ignored.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "NO_USAGE",
    "UNSET",
    "Chunk",
    "ChunkChoice",
    "ChunkDelta",
    "ChunkDetails",
    "ChunkFunction",
    "ChunkLogprob",
    "ChunkLogprobs",
    "ChunkShapeError",
    "ChunkToolCall",
    "ChunkUsage",
    "ContentPart",
    "chunk_from",
    "decode",
    "decode_each",
]


class ChunkFunction(msgspec.Struct, gc=False):
    """The function of a tool-call fragment (or a legacy ``function_call`` delta)."""

    name: str | None = None
    arguments: Any = None


class ChunkToolCall(msgspec.Struct, gc=False):
    """One fragment of a tool call."""

    index: int | None = None
    id: str | None = None
    function: ChunkFunction | None = None


class ContentPart(msgspec.Struct, gc=False):
    """One typed chunk of a ``content`` list (Mistral's reasoning models): text, or thinking.

    A ``thinking`` chunk holds its text as a list of text chunks in ``thinking``.
    """

    type: str | None = None
    text: str | None = None
    thinking: Any = None
    signature: str | None = None


class ChunkDelta(msgspec.Struct, gc=False):
    """What a chunk adds to the answer.

    ``content`` is text, or a list of typed chunks; ``reasoning_details`` are signed reasoning
    blocks (OpenRouter's format), kept as sent.
    """

    content: str | list[ContentPart] | None = None
    tool_calls: list[ChunkToolCall] | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    function_call: ChunkFunction | None = None
    reasoning_details: list[dict[str, Any]] | None = None


class ChunkLogprob(msgspec.Struct, gc=False):
    """The log-probability of one sampled token (``logprobs.content[]``); other fields are skipped."""

    logprob: float | None = None


class ChunkLogprobs(msgspec.Struct, gc=False):
    """A choice's ``logprobs``: one entry per token of its delta."""

    content: list[ChunkLogprob] | None = None


class ChunkChoice(msgspec.Struct, gc=False):
    """The first choice of a chunk (tooloop asks for one).

    ``token_ids`` (vLLM's ``return_token_ids``) and ``logprobs`` are read only when tokens are
    captured; servers that send neither cost nothing more.
    """

    delta: ChunkDelta | None = None
    finish_reason: str | None = None
    token_ids: list[int] | None = None
    logprobs: ChunkLogprobs | None = None
    stop_reason: Any = None
    """vLLM's: the stop string (or token id) that ended the answer."""


class ChunkDetails(msgspec.Struct, gc=False):
    """The token details of a ``usage`` object (the fields :func:`.response.usage_from` reads)."""

    cached_tokens: Any = None
    cache_write_tokens: Any = None
    reasoning_tokens: Any = None


class ChunkUsage(msgspec.Struct, gc=False):
    """A chunk's ``usage``: the fields :func:`.response.usage_from` reads from a dict.

    Decoded as a record, not a dict: the usage chunk's nested objects would otherwise be three
    dicts and every key of them. Values are kept as sent (:func:`.response.chunk_usage` is as
    lenient about them as ``usage_from``).
    """

    prompt_tokens: Any = None
    completion_tokens: Any = None
    prompt_tokens_details: ChunkDetails | None = None
    completion_tokens_details: ChunkDetails | None = None
    prompt_cache_hit_tokens: Any = None
    cost: Any = None


class Chunk(msgspec.Struct, gc=False):
    """One ``chat.completion.chunk``, or an error event (``error`` set) a server sent instead."""

    choices: list[ChunkChoice] | msgspec.UnsetType | None = msgspec.UNSET
    """``UNSET`` when the chunk has no ``choices`` at all (falsy, like an empty list)."""
    usage: ChunkUsage | None = None
    model: str | None = None
    id: str | None = None
    error: Any = None
    prompt_token_ids: list[int] | None = None
    """vLLM's prompt ids, on the first chunk of a stream that asked for token ids."""


UNSET = msgspec.UNSET

NO_USAGE = ChunkUsage()
"""A ``usage`` without any field tooloop reads (``{}``): no usage, as an empty dict was."""

ChunkShapeError = msgspec.ValidationError
"""Raised for JSON that is not a chunk (a ``ValueError``)."""

_many = msgspec.json.Decoder(list[Chunk], strict=False)
_one = msgspec.json.Decoder(Chunk, strict=False)

decode = _many.decode
"""The chunks of a JSON array of chunks (raises ``msgspec.DecodeError``, a ``ValueError``)."""

decode_each = _one.decode
"""One chunk from its JSON text."""


def chunk_from(data: Any) -> Chunk:
    """The chunk for JSON already decoded (a dict); raises ``msgspec.ValidationError`` when it is not one."""
    return msgspec.convert(data, Chunk, strict=False)
