"""What the model is told about a tool call's outcome: the one renderer.

A call's outcome is rendered once, when it finishes (:func:`render_result`, :func:`render_error`),
and kept as :attr:`ToolCallMessage.content`. Every provider adapter sends it through
:func:`for_model`, which gives the same :class:`ToolOutcome` for every provider; an adapter only
chooses the wire field (a ``tool`` message, a ``tool_result`` block with ``is_error``, a Gemini
``functionResponse`` under ``result`` or ``error``...). The fixed sentences for outcomes that
have no text of their own (interrupted, awaiting approval, a failure without a message) live here
too.

A tool that returns :class:`~tooloop.messages.ToolOutput` (MCP tools do) gives content parts:
images, audio, resources. Their text form (:func:`render_output`: text as it is, a short
placeholder for everything else) is the ``text`` every provider can take; ``ToolOutcome.parts``
carries them for the adapters that send images natively in tool results.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, assert_never

from ._frozen import draft_of, new_draft
from ._json import error_text, render, truncate
from .messages import (
    AudioContent,
    ContentPart,
    DocumentContent,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolCallMessage,
    ToolCallStatus,
    ToolOutput,
)

__all__ = [
    "AWAITING",
    "INTERRUPTED",
    "ToolOutcome",
    "attachment_mark",
    "for_model",
    "native_parts",
    "render_error",
    "render_output",
    "render_parts",
    "render_result",
]

INTERRUPTED = "Error: this tool call was interrupted before it produced a result; it was not run again."
"""The result of a call that started and never finished (a crash, an edited history), closed
without running it again (a new prompt arrived, or it is not in the last batch)."""

AWAITING = "Awaiting approval: this call has not run yet."
"""The result of a call waiting for a person's decision (never sent to a model)."""

_ERROR_PREFIX = "Error: "


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a model is told about one tool call: ``text``, whether the call failed, and the content
    parts of a successful call (for adapters that send images natively; ``text`` holds their
    text form for the others)."""

    text: str
    is_error: bool
    parts: tuple[ContentPart, ...] = ()


def render_result(value: Any, limit: int | None) -> str:
    """The text of a tool's return value: strings as they are, structures as JSON, cut to ``limit``."""
    return truncate(render(value), limit)


def render_output(output: ToolOutput, limit: int | None) -> tuple[str, tuple[ContentPart, ...]]:
    """The text of a tool's content parts and the parts themselves, text cut to ``limit`` in both
    (binary parts are kept whole); a structured value alone is rendered as JSON."""
    if not output.parts:
        return render_result(output.structured, limit), ()
    parts = _bounded(output.parts, limit)
    return truncate(render_parts(output.parts), limit), parts


def _bounded(parts: tuple[ContentPart, ...], limit: int | None) -> tuple[ContentPart, ...]:
    """``parts`` with the text of text parts and text resources cut so that together they hold at
    most ``limit`` characters (each cut part says how much it lost); binary parts kept whole."""
    if limit is None:
        return parts
    left = limit
    bounded: list[ContentPart] = []
    for part in parts:
        if isinstance(part, TextContent):
            bounded.append(TextContent(truncate(part.text, left)))
            left = max(0, left - len(part.text))
        elif isinstance(part, EmbeddedResource) and part.text is not None:
            bounded.append(replace(part, text=truncate(part.text, left)))
            left = max(0, left - len(part.text))
        else:
            bounded.append(part)
    return tuple(bounded)


def native_parts(outcome: ToolOutcome, image_types: frozenset[str]) -> tuple[TextContent | ImageContent, ...] | None:
    """The parts of ``outcome`` for a provider taking images of ``image_types`` in tool results:
    text parts and those images as they are, every other part as its text placeholder (merged
    into the neighbouring text). None when there is no such image: then send ``outcome.text``."""
    if not any(isinstance(p, ImageContent) and p.mime_type in image_types for p in outcome.parts):
        return None
    native: list[TextContent | ImageContent] = []
    for part in outcome.parts:
        if isinstance(part, ImageContent) and part.mime_type in image_types:
            native.append(part)
            continue
        text = part.text if isinstance(part, TextContent) else _render_part(part)
        if native and isinstance(native[-1], TextContent):
            native[-1] = TextContent(f"{native[-1].text}\n{text}")
        elif text:
            native.append(TextContent(text))
    return tuple(native)


def render_parts(parts: tuple[ContentPart, ...] | list[ContentPart]) -> str:
    """The text form of content parts: text as it is, everything else as a short placeholder."""
    return "\n".join(_render_part(part) for part in parts)


def _render_part(part: ContentPart) -> str:
    if isinstance(part, TextContent):
        return part.text
    if isinstance(part, ImageContent | AudioContent):
        return f"[{part.kind}: {part.mime_type}, {_decoded_size(part.data)} bytes]"
    if isinstance(part, ResourceLink):
        about = f" ({part.mime_type})" if part.mime_type else ""
        described = f": {part.description}" if part.description else ""
        return f"[resource link: {part.name} <{part.uri}>{about}{described}]"
    if isinstance(part, EmbeddedResource):
        if part.text is not None:
            return f"[resource <{part.uri}>]\n{part.text}"
        return f"[resource <{part.uri}>: {part.mime_type or 'binary'}, {_decoded_size(part.blob or '')} bytes]"
    assert_never(part)


def attachment_mark(part: ImageContent | AudioContent | DocumentContent) -> str:
    """A short placeholder for an attachment of a user message (``[document report.pdf: application/pdf,
    1200 bytes]``), where its content cannot be shown."""
    name = f" {part.name}" if isinstance(part, DocumentContent) and part.name else ""
    return f"[{part.kind}{name}: {part.mime_type}, {_decoded_size(part.data)} bytes]"


def _decoded_size(data: str) -> int:
    padding = len(data) - len(data.rstrip("="))
    return len(data) * 3 // 4 - padding


def render_error(error: BaseException, limit: int | None = None) -> str:
    """The text of a failure: the error's type name and message, cut to ``limit``."""
    return truncate(error_text(error), limit)


def for_model(call: ToolCallMessage) -> ToolOutcome:
    """The outcome of ``call`` as every provider receives it.

    A failure (error, denied, cancelled, unfinished) always reads as one: its text starts with
    ``Error:``, and a failure without text says what happened.
    """
    if call.status is ToolCallStatus.OK:
        return _outcome(call.content, False, call.parts)
    text = call.content if call.content.strip() else _without_text(call.status)
    if not text.lower().startswith("error"):
        text = _ERROR_PREFIX + text
    return _outcome(text, True, ())


_OutcomeDraft = draft_of(ToolOutcome)


def _outcome(text: str, is_error: bool, parts: tuple[ContentPart, ...]) -> ToolOutcome:
    """``ToolOutcome(text, is_error, parts)``, filled through a draft (see tooloop._frozen): every
    adapter asks for one per call of each batch it converts."""
    made = new_draft(_OutcomeDraft)
    made.text = text
    made.is_error = is_error
    made.parts = parts
    made.__class__ = ToolOutcome
    outcome: ToolOutcome = made
    return outcome


def _without_text(status: ToolCallStatus) -> str:
    match status:
        case ToolCallStatus.ERROR:
            return "the tool call failed."
        case ToolCallStatus.DENIED:
            return "the tool call was denied."
        case ToolCallStatus.CANCELLED:
            return "the tool call was cancelled before it finished."
        case ToolCallStatus.PENDING | ToolCallStatus.STARTED | ToolCallStatus.OK:
            return INTERRUPTED[len(_ERROR_PREFIX) :]
        case _:
            assert_never(status)
