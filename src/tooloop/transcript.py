"""``Transcript``: the immutable record of a conversation, and its versioned JSON form."""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, Literal, overload

from ._json import error_message, to_jsonable
from .errors import CorruptDataError, RestoredToolError
from .messages import (
    AssistantMessage,
    AudioContent,
    ContentPart,
    DocumentContent,
    EmbeddedResource,
    ImageContent,
    Message,
    ResourceLink,
    StopReason,
    SystemMessage,
    TextContent,
    ThinkingPart,
    Tokens,
    ToolCallMessage,
    ToolCallStatus,
    Usage,
    UserMessage,
    UserPart,
    little_endian,
    native_order,
)

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = [
    "SCHEMA_VERSION",
    "Transcript",
    "message_from_dict",
    "message_to_dict",
    "part_from_dict",
    "part_to_dict",
    "thinking_from_dict",
    "thinking_to_dict",
    "tokens_from_dict",
    "tokens_to_dict",
    "usage_from_dict",
    "usage_to_dict",
]

SCHEMA_VERSION = 1
"""Version of the JSON form written by :meth:`Transcript.to_json`; newer versions are refused."""


class Transcript(Sequence[Message]):
    """An immutable sequence of messages.

    ``+`` and :meth:`append` return a new transcript and leave this one unchanged. Appending to the
    newest transcript of a line of appends shares storage with it, so building a conversation one
    message at a time costs amortised O(1) per message, not a copy of the whole history.
    """

    __slots__ = ("_items", "_len")

    def __init__(self, messages: Iterable[Message] = ()):
        self._items: list[Message] = list(messages)
        self._len = len(self._items)

    @classmethod
    def _shared(cls, items: list[Message], length: int) -> Transcript:
        new = cls.__new__(cls)
        new._items = items
        new._len = length
        return new

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Transcript: ...
    def __getitem__(self, index: int | slice) -> Message | Transcript:
        if isinstance(index, slice):
            positions = range(*index.indices(self._len))  # copies only the slice, not the whole history
            items = self._items
            part = items[positions.start : positions.stop] if positions.step == 1 else [items[i] for i in positions]
            return Transcript._shared(part, len(part))
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("transcript index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[Message]:
        # in C, and bounded: a newer transcript sharing the list may append to it meanwhile
        return islice(self._items, self._len)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Transcript):
            return self._len == other._len and self._items[: self._len] == other._items[: other._len]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._items[: self._len]))

    def __repr__(self) -> str:
        return f"Transcript({self._items[: self._len]!r})"

    def append(self, message: Message) -> Transcript:
        """A new transcript with ``message`` at the end."""
        items = self._items
        if len(items) == self._len:
            items.append(message)
            return Transcript._shared(items, self._len + 1)
        return Transcript([*items[: self._len], message])

    def extend(self, messages: Iterable[Message]) -> Transcript:
        """A new transcript with ``messages`` at the end."""
        items = self._items
        if len(items) != self._len:
            return Transcript([*items[: self._len], *messages])
        if type(messages) is not tuple and type(messages) is not list:  # what the loop appends: no copy
            messages = list(messages)  # taken whole first: it may iterate over this very list
        items.extend(messages)
        return Transcript._shared(items, len(items))

    def __add__(self, other: Transcript | Iterable[Message] | Message) -> Transcript:
        if isinstance(other, SystemMessage | UserMessage | AssistantMessage | ToolCallMessage):
            return self.append(other)
        return self.extend(other)

    def __radd__(self, other: Iterable[Message]) -> Transcript:
        return Transcript([*other, *self])

    @property
    def messages(self) -> tuple[Message, ...]:
        """The messages as a tuple."""
        return tuple(self._items[: self._len])

    @property
    def final_message(self) -> AssistantMessage | None:
        """The last assistant answer, or None when the transcript has none."""
        for i in range(self._len - 1, -1, -1):
            message = self._items[i]
            if isinstance(message, AssistantMessage):
                return message
        return None

    @property
    def final_text(self) -> str:
        """Text of :attr:`final_message`, or an empty string."""
        final = self.final_message
        return final.text if final is not None else ""

    @property
    def tool_invocations(self) -> tuple[ToolCallMessage, ...]:
        """Every tool call in order, each with its outcome."""
        return tuple(m for m in self if isinstance(m, ToolCallMessage))

    @property
    def iterations(self) -> int:
        """How many model responses the transcript holds (answers plus tool-call batches)."""
        count = 0
        previous_batch: str | None = None
        for message in self:
            if isinstance(message, AssistantMessage):
                count += 1
                previous_batch = None
            elif isinstance(message, ToolCallMessage):
                if message.batch_id != previous_batch:
                    count += 1
                previous_batch = message.batch_id
            else:
                previous_batch = None
        return count

    @overload
    def render(
        self,
        *,
        rich: Literal[False] = False,
        usage: Usage | None = None,
        stop_reason: str | None = None,
        max_chars: int = 500,
    ) -> str: ...
    @overload
    def render(
        self, *, rich: Literal[True], usage: Usage | None = None, stop_reason: str | None = None, max_chars: int = 500
    ) -> RenderableType: ...
    def render(
        self, *, rich: bool = False, usage: Usage | None = None, stop_reason: str | None = None, max_chars: int = 500
    ) -> str | RenderableType:
        """The conversation, readably: each message with its role, every tool call with its
        arguments and outcome (ok, or the error), then how it ended and, when given, ``usage``.

        Plain text by default (stable, for logs and pipes). ``rich=True`` returns a renderable for
        a ``rich`` console (coloured roles, answers as markdown; needs ``rich``, imported only then).
        Tool outcomes longer than ``max_chars`` are cut with a marker (``0`` keeps them whole).
        ``stop_reason`` overrides the ending read from the last messages (a run's own reason).
        """
        from ._render import render_rich, render_text

        render = render_rich if rich else render_text
        return render(self, usage=usage, stop_reason=stop_reason, limit=max_chars)

    def to_dicts(self, *, prompt_extensions: bool = False, binary: bool = False) -> list[dict[str, Any]]:
        """Plain JSON-compatible dicts, one per message.

        With ``prompt_extensions`` (how ``run_many`` records keep them), a response's tokens whose
        prompt continues the previous response's prompt and completion are written with only the
        ids after those (``prompt_after``, see :func:`tokens_to_dict`), not the whole prompt again;
        :meth:`from_json` reads both forms. With ``binary`` the token arrays are left as bytes for
        an encoder that writes bytes as base64 (msgspec's), giving the same JSON.
        """
        if not (prompt_extensions or binary):
            return [message_to_dict(m) for m in self]
        out = []
        previous: Tokens | None = None
        for message in self:
            out.append(message_to_dict(message, previous if prompt_extensions else None, binary=binary))
            tokens = getattr(message, "tokens", None)
            previous = tokens if tokens is not None else previous
        return out

    def to_json(self, *, indent: int | None = None) -> str:
        """The versioned JSON form: ``{"version": 1, "messages": [...]}``."""
        return json.dumps({"version": SCHEMA_VERSION, "messages": self.to_dicts()}, ensure_ascii=False, indent=indent)

    def save_to_file(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path`` atomically (a crash never leaves half a file)."""
        from pathlib import Path

        target = Path(path)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        temporary.write_text(self.to_json(indent=2), encoding="utf-8")
        os.replace(temporary, target)

    @classmethod
    def load_from_file(cls, path: str | os.PathLike[str]) -> Transcript:
        """Read a file written by :meth:`save_to_file` (``CorruptDataError`` names what is wrong)."""
        from pathlib import Path

        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    @classmethod
    def from_json(cls, data: str | bytes | Mapping[str, Any]) -> Transcript:
        """Read what :meth:`to_json` wrote. Tool errors come back as :class:`RestoredToolError`.

        Raises :class:`CorruptDataError` naming the position of the first message it cannot read.
        """
        if isinstance(data, str | bytes):
            try:
                data = json.loads(data)
            except (ValueError, RecursionError) as exc:  # also bytes that are not UTF-8, nesting too deep
                raise CorruptDataError(f"transcript JSON is not valid: {exc}") from exc
        if not isinstance(data, Mapping) or not isinstance(data.get("messages"), list):
            raise CorruptDataError("transcript JSON must be an object with a 'messages' list")
        version = data.get("version", SCHEMA_VERSION)
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise CorruptDataError(
                f"transcript schema version {version!r} is newer than this tooloop reads ({SCHEMA_VERSION})"
            )
        messages: list[Message] = []
        previous: Tokens | None = None  # the last response's tokens, which a prompt_after continues
        for position, item in enumerate(data["messages"]):
            try:
                message = message_from_dict(item, previous)
            except _UNREADABLE as exc:
                error = CorruptDataError(f"message {position} of the transcript cannot be read: {exc!r}")
                error.transcript = cls(messages)  # the messages before it are kept
                raise error from exc
            messages.append(message)
            tokens = getattr(message, "tokens", None)
            previous = tokens if tokens is not None else previous
        return cls(messages)


_UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, RecursionError)
"""What reading a malformed message dict raises (wrapped into :class:`CorruptDataError`)."""


def thinking_to_dict(part: ThinkingPart) -> dict[str, Any]:
    """The JSON-compatible dict of a thinking part."""
    data: dict[str, Any] = {"text": part.text}
    if part.signature is not None:
        data["signature"] = part.signature
    if part.redacted:
        data["redacted"] = True
    if part.provider is not None:
        data["provider"] = part.provider
    return data


def thinking_from_dict(data: Mapping[str, Any]) -> ThinkingPart:
    """Read :func:`thinking_to_dict`'s form."""
    if not isinstance(data, Mapping):
        raise TypeError(f"a thinking part must be an object, got {data!r}")
    redacted = data.get("redacted", False)
    if not isinstance(redacted, bool):
        raise TypeError(f"field 'redacted' must be true or false, got {redacted!r}")
    return ThinkingPart(
        text=_text(data, "text"),
        signature=_optional_text(data, "signature"),
        redacted=redacted,
        provider=_optional_text(data, "provider"),
    )


def message_to_dict(message: Message, previous: Tokens | None = None, *, binary: bool = False) -> dict[str, Any]:
    """The JSON-compatible dict of one message (the unit a store writes); ``previous``, the
    tokens of the response before it, lets its tokens be written as an extension of those
    (:func:`tokens_to_dict`, as ``binary``)."""
    if isinstance(message, UserMessage):
        return _user_to_dict(message)
    if isinstance(message, SystemMessage):
        return {"kind": message.kind, "text": message.text}
    if isinstance(message, AssistantMessage):
        return _assistant_to_dict(message, previous, binary)
    if isinstance(message, ToolCallMessage):
        return _tool_call_to_dict(message, previous, binary)
    raise TypeError(f"not a tooloop message: {message!r}")


def _user_to_dict(message: UserMessage) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": "user", "text": message.text}
    if message.turn_id is not None:
        data["turn_id"] = message.turn_id
    if message.parts:
        data["parts"] = [part_to_dict(p) for p in message.parts]
    return data


def _assistant_to_dict(message: AssistantMessage, previous: Tokens | None, binary: bool) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": "assistant", "text": message.text}
    if message.thinking:
        data["thinking"] = [thinking_to_dict(t) for t in message.thinking]
    if message.refusal is not None:
        data["refusal"] = message.refusal
    if message.stop_reason is not StopReason.END_TURN:
        data["stop_reason"] = message.stop_reason.value
    if message.model is not None:
        data["model"] = message.model
    if message.provider_data:
        data["provider_data"] = to_jsonable(message.provider_data)
    if message.response_id is not None:
        data["response_id"] = message.response_id
    if message.stop_sequence is not None:
        data["stop_sequence"] = message.stop_sequence
    if message.usage is not None:
        data["usage"] = usage_to_dict(message.usage)
    if message.tokens is not None:
        data["tokens"] = tokens_to_dict(message.tokens, previous, binary=binary)
    return data


def tokens_to_dict(tokens: Tokens, previous: Tokens | None = None, *, binary: bool = False) -> dict[str, Any]:
    """The JSON-compatible dict of a response's tokens: each array as base64 of its little-endian
    bytes (``prompt`` and ``completion``: 32-bit ints; ``logprobs``: 32-bit floats, NaN for none;
    data written before logprobs were kept as 32-bit floats holds 64-bit ones, which
    :func:`tokens_from_dict` reads too), and ``problem`` when there is one. Compact: a Python
    object per token would not be.

    When ``previous`` is given and these tokens' prompt continues it (``tokens.extends is
    previous``), ``prompt_after`` holds only the ids after ``previous``' whole prompt and
    completion, in place of ``prompt``; reading it needs ``previous`` again. A reader that
    knows only ``prompt`` sees no prompt ids: such tokens are unusable to it, never misaligned.

    With ``binary`` each array is left as its little-endian bytes, for an encoder that writes
    bytes as base64 (msgspec's JSON encoder: the same JSON without a base64 string made first).
    """
    text = _raw if binary else _b64
    if previous is not None and tokens.extends is previous:
        data: dict[str, Any] = {"prompt_after": text(little_endian(tokens.prompt, "i"))}
    else:
        data = {"prompt": text(little_endian(tokens.whole_prompt, "i"))}
    data["completion"] = text(little_endian(tokens.completion, "i"))
    if tokens.logprobs:
        data["logprobs"] = text(little_endian(tokens.logprobs, "f"))
    if tokens.problem is not None:
        data["problem"] = tokens.problem
    if tokens.fallback is not None:
        data["fallback"] = tokens.fallback
    return data


def tokens_from_dict(data: Mapping[str, Any], previous: Tokens | None = None) -> Tokens:
    """Read :func:`tokens_to_dict`'s form; ``ValueError`` when an array is not whole values, or
    when a ``prompt_after`` has no ``previous`` tokens to continue."""
    if not isinstance(data, Mapping):
        raise TypeError(f"field 'tokens' must be an object, got {data!r}")
    extends = None
    if "prompt_after" in data:
        if previous is None:
            raise ValueError("tokens field 'prompt_after' continues an earlier response's tokens, and there are none")
        extends = previous
    prompt = _unb64(data, "prompt" if extends is None else "prompt_after", 4)
    completion = _unb64(data, "completion", 4)
    logprobs = _unb64(data, "logprobs", 4)
    # one 32-bit float per completion id, or (written before they were) one 64-bit float
    width = 8 if logprobs and len(logprobs) == 2 * len(completion) else 4
    if logprobs and len(logprobs) != len(completion) * width // 4:
        raise ValueError(f"{len(logprobs) // 4} logprobs for {len(completion) // 4} completion ids")
    return Tokens(
        native_order(prompt, "i"),
        native_order(completion, "i"),
        native_order(logprobs, "d" if width == 8 else "f"),
        _optional_text(data, "problem"),
        _optional_text(data, "fallback"),
        extends,
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _raw(data: bytes) -> bytes:
    return data


def _unb64(data: Mapping[str, Any], key: str, size: int) -> bytes:
    text = data.get(key, "")
    if not isinstance(text, str):
        raise TypeError(f"tokens field {key!r} must be a base64 string, got {text!r}")
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"tokens field {key!r} is not base64: {exc}") from None
    if len(raw) % size:
        raise ValueError(f"tokens field {key!r} holds {len(raw)} bytes, not whole {size}-byte values")
    return raw


def _tool_call_to_dict(message: ToolCallMessage, previous: Tokens | None, binary: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "kind": "tool_call",
        "tool_name": message.tool_name,
        "tool_call_id": message.tool_call_id,
        "arguments": to_jsonable(message.arguments),
        "status": message.status.value,
        "content": message.content,
        "batch_id": message.batch_id,
    }
    if message.result is not None:
        data["result"] = to_jsonable(message.result)
    if message.error is not None or message.error_type is not None:
        data["error"] = {
            "type": message.error_type,
            "message": error_message(message.error) if message.error is not None else message.content,
        }
    if message.message:
        data["message"] = message.message
    if message.raw_arguments is not None:
        data["raw_arguments"] = message.raw_arguments
    if message.thinking:
        data["thinking"] = [thinking_to_dict(t) for t in message.thinking]
    if message.provider_data:
        data["provider_data"] = to_jsonable(message.provider_data)
    if message.parts:
        data["parts"] = [part_to_dict(p) for p in message.parts]
    if message.response_id is not None:
        data["response_id"] = message.response_id
    if message.usage is not None:
        data["usage"] = usage_to_dict(message.usage)
    if message.tokens is not None:
        data["tokens"] = tokens_to_dict(message.tokens, previous, binary=binary)
    return data


_USAGE_COUNTS = (
    "input_tokens",
    "output_tokens",
    "requests",
    "tool_calls",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "cache_write_1h_tokens",
)


def usage_to_dict(usage: Usage) -> dict[str, Any]:
    """A message's usage as compact JSON-compatible data: the counts that are not zero, and the
    cost as a decimal string (so no fraction of a cent is rounded away) when it is known."""
    data: dict[str, Any] = {name: getattr(usage, name) for name in _USAGE_COUNTS if getattr(usage, name)}
    if usage.cost is not None:
        data["cost"] = str(usage.cost)
    if usage.estimated:
        data["estimated"] = True
    return data


def usage_from_dict(data: Mapping[str, Any]) -> Usage:
    """Read :func:`usage_to_dict`'s form (absent counts are zero, unknown keys are ignored)."""
    if not isinstance(data, Mapping):
        raise TypeError(f"field 'usage' must be an object, got {data!r}")
    counts: dict[str, int] = {}
    for name in _USAGE_COUNTS:
        value = data.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"usage field {name!r} must be a whole number, got {value!r}")
        counts[name] = value
    cost = data.get("cost")
    if cost is not None:
        if not isinstance(cost, str | int | float) or isinstance(cost, bool):
            raise TypeError(f"usage field 'cost' must be a decimal string, got {cost!r}")
        from decimal import Decimal, InvalidOperation  # only for a stored cost

        try:
            cost = Decimal(str(cost))
        except InvalidOperation as exc:
            raise ValueError(f"usage field 'cost' is not a number: {cost!r}") from exc
        if not cost.is_finite():
            raise ValueError(f"usage field 'cost' is not a finite number: {cost!r}")
    return Usage(**counts, cost=cost, estimated=data.get("estimated") is True)


def _usage(data: Mapping[str, Any]) -> Usage | None:
    value = data.get("usage")
    return None if value is None else usage_from_dict(value)


def part_to_dict(part: ContentPart | DocumentContent) -> dict[str, Any]:
    """The JSON-compatible dict of a content part (``kind`` plus its fields that are set)."""
    data: dict[str, Any] = {"kind": part.kind}
    for name in part.__dataclass_fields__:
        value = getattr(part, name)
        if value is not None:
            data[name] = value
    return data


_PART_TYPES: dict[str, type[ContentPart]] = {
    cls.kind: cls for cls in (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
}
_USER_PART_TYPES: dict[str, type[UserPart]] = {
    cls.kind: cls for cls in (TextContent, ImageContent, AudioContent, DocumentContent)
}


def part_from_dict(data: Mapping[str, Any]) -> ContentPart:
    """Read :func:`part_to_dict`'s form."""
    kind = data["kind"]
    cls = _PART_TYPES.get(kind)
    if cls is None:
        raise ValueError(f"unknown content part kind {kind!r}")
    return cls(**{k: v for k, v in data.items() if k != "kind"})


def _user_part_from_dict(data: Mapping[str, Any]) -> UserPart:
    if not isinstance(data, Mapping):
        raise TypeError(f"a user message part must be an object, got {data!r}")
    kind = data["kind"]
    cls = _USER_PART_TYPES.get(kind)
    if cls is None:
        raise ValueError(f"unknown user message part kind {kind!r}")
    return cls(**{k: v for k, v in data.items() if k != "kind"})


def _user_from_dict(data: Mapping[str, Any]) -> UserMessage:
    turn_id = None if data.get("turn_id") is None else _text(data, "turn_id")
    parts = data.get("parts")
    if parts is None:  # sessions written before user messages had parts
        return UserMessage(_text(data, "text"), turn_id)
    if not isinstance(parts, list | tuple):
        raise TypeError(f"field 'parts' must be a list, got {parts!r}")
    return UserMessage(turn_id=turn_id, parts=tuple(_user_part_from_dict(p) for p in parts))


def _text(data: Mapping[str, Any], key: str, default: str | None = None) -> str:
    """A string field; a missing required one or a non-string is corrupt data, never ``"None"``."""
    value = data[key] if default is None else data.get(key, default)
    if not isinstance(value, str):
        raise TypeError(f"field {key!r} must be a string, got {value!r}")
    return value


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"field {key!r} must be a string or absent, got {value!r}")
    return value


def _mapping(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise TypeError(f"field {key!r} must be an object, got {value!r}")
    return dict(value)


def _thinking(data: Mapping[str, Any]) -> tuple[ThinkingPart, ...]:
    value = data.get("thinking", ())
    if not isinstance(value, list | tuple):
        raise TypeError(f"field 'thinking' must be a list, got {value!r}")
    return tuple(thinking_from_dict(t) for t in value)


def message_from_dict(data: Mapping[str, Any], previous: Tokens | None = None) -> Message:
    """Read one message written by :func:`message_to_dict` (``previous``: the tokens of the
    response before it, which its tokens' ``prompt_after`` continues).

    Raises ``KeyError``, ``TypeError`` or ``ValueError`` when a field is missing or has the wrong type.
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"a message must be an object, got {data!r}")
    kind = data["kind"]
    if kind == "system":
        return SystemMessage(_text(data, "text"))
    if kind == "user":
        return _user_from_dict(data)
    if kind == "assistant":
        return AssistantMessage(
            _text(data, "text", ""),
            thinking=_thinking(data),
            refusal=_optional_text(data, "refusal"),
            stop_reason=StopReason(data.get("stop_reason", StopReason.END_TURN)),
            model=_optional_text(data, "model"),
            provider_data=_mapping(data, "provider_data"),
            response_id=_optional_text(data, "response_id"),
            stop_sequence=_optional_text(data, "stop_sequence"),
            usage=_usage(data),
            tokens=_tokens(data, previous),
        )
    if kind == "tool_call":
        return _tool_call_from_dict(data, previous)
    raise ValueError(f"unknown message kind {kind!r}")


def _tool_call_from_dict(data: Mapping[str, Any], previous: Tokens | None) -> ToolCallMessage:
    error, error_type = _error_from(data.get("error"))
    return ToolCallMessage(
        tool_name=_text(data, "tool_name"),
        tool_call_id=_text(data, "tool_call_id"),
        arguments=_mapping(data, "arguments"),
        result=data.get("result"),
        error=error,
        error_type=error_type,
        message=_text(data, "message", ""),
        status=ToolCallStatus(data.get("status", ToolCallStatus.OK)),
        content=_text(data, "content", ""),
        batch_id=_text(data, "batch_id", ""),
        raw_arguments=_optional_text(data, "raw_arguments"),
        thinking=_thinking(data),
        provider_data=_mapping(data, "provider_data"),
        parts=tuple(part_from_dict(p) for p in data.get("parts", ())),
        response_id=_optional_text(data, "response_id"),
        usage=_usage(data),
        tokens=_tokens(data, previous),
    )


def _tokens(data: Mapping[str, Any], previous: Tokens | None) -> Tokens | None:
    value = data.get("tokens")
    return None if value is None else tokens_from_dict(value, previous)


def _error_from(value: Any) -> tuple[RestoredToolError | None, str | None]:
    if value is None:
        return None, None
    if not isinstance(value, Mapping):
        raise TypeError(f"field 'error' must be an object, got {value!r}")
    error_type = _text(value, "type")
    return RestoredToolError(error_type, _text(value, "message", "")), error_type
