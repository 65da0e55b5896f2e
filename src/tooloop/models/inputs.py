"""What a model takes in a user message besides text: images, audio, documents.

A model says which attachment kinds it takes with an ``input_kinds`` attribute (the provider
adapters do; Chat Completions servers have an ``input_kinds`` option, as the wire format cannot
tell whether the model behind it sees images). A model without the attribute (a
:class:`~tooloop.testing.FunctionModel`, your own ``Model``) is given every kind and decides itself.
A prompt with an attachment the model does not take is refused before anything is sent or
stored, in one line naming the attachment, the model and what it takes. A text document
(``text/*`` in UTF-8) is never refused: a model without document input is sent its text.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any, assert_never

from ..errors import UnsupportedContentError
from ..messages import AudioContent, DocumentContent, ImageContent, Message, TextContent, UserMessage, UserPart

__all__ = [
    "ALL_INPUTS",
    "check_input_kinds",
    "check_prompt_inputs",
    "data_url",
    "decoded_text",
    "file_name",
    "input_kinds",
    "kinds_text",
    "refuse",
    "wav_or_mp3",
]

ALL_INPUTS: frozenset[str] = frozenset({"image", "audio", "document"})
"""Every attachment kind."""


def input_kinds(model: Any) -> frozenset[str]:
    """The attachment kinds ``model`` takes: its ``input_kinds``, or all of them when it does not say."""
    kinds = getattr(model, "input_kinds", None)
    return ALL_INPUTS if kinds is None else frozenset(kinds)


def check_input_kinds(value: object) -> frozenset[str]:
    """An ``input_kinds`` option: a collection of ``"image"``, ``"audio"``, ``"document"``."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise UnsupportedContentError(
            f"input_kinds must be a list of 'image', 'audio', 'document' (possibly empty), not {value!r}"
        )
    kinds = frozenset(value)
    unknown = sorted(str(kind) for kind in kinds - ALL_INPUTS)
    if unknown:
        raise UnsupportedContentError(
            f"input_kinds has {', '.join(map(repr, unknown))}; the kinds are 'image', 'audio' and 'document'"
        )
    return kinds


def refuse(part: ImageContent | AudioContent | DocumentContent, model: str, takes: str) -> UnsupportedContentError:
    """The one-line error for an attachment ``model`` cannot take; ``takes`` says what it takes."""
    return UnsupportedContentError(f"{model} cannot take {_describe(part)} in a user message; it takes {takes}")


def check_prompt_inputs(model: Any, messages: Iterable[Message]) -> None:
    """Refuse, before anything is sent, an attachment of kind ``model`` does not take."""
    kinds = input_kinds(model)
    if kinds == ALL_INPUTS:
        return
    for message in messages:
        if not isinstance(message, UserMessage):
            continue
        for part in message.attachments:
            if part.kind not in kinds and not (isinstance(part, DocumentContent) and decoded_text(part) is not None):
                name = getattr(model, "name", type(model).__name__)
                provider = getattr(model, "provider", None)
                label = f"{provider} model {name!r}" if provider else f"model {name!r}"
                raise refuse(part, label, kinds_text(kinds))


def kinds_text(kinds: frozenset[str]) -> str:
    """What a model with these attachment kinds takes, in words (``"text, audio, image"``)."""
    return "text only" if not kinds else "text, " + ", ".join(sorted(kinds))


def _describe(part: UserPart) -> str:
    if isinstance(part, ImageContent):
        return f"an image ({part.mime_type})"
    if isinstance(part, AudioContent):
        return f"audio ({part.mime_type})"
    if isinstance(part, DocumentContent):
        named = f" {part.name!r}" if part.name else ""
        return f"a document{named} ({part.mime_type})"
    if isinstance(part, TextContent):
        return "text"
    assert_never(part)


def decoded_text(part: DocumentContent) -> str | None:
    """A text document's content (``text/*`` in UTF-8), for providers that take documents as text."""
    if not part.mime_type.startswith("text/"):
        return None
    try:
        return base64.b64decode(part.data, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def data_url(part: ImageContent | AudioContent | DocumentContent) -> str:
    """``data:<mime>;base64,<data>``: how OpenAI's APIs take inline content."""
    return f"data:{part.mime_type};base64,{part.data}"


_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def wav_or_mp3(part: AudioContent, model: str) -> str:
    """OpenAI's audio ``format`` for ``part`` (``"wav"`` or ``"mp3"``, the two it takes), else refused."""
    fmt = _AUDIO_FORMATS.get(part.mime_type.lower())
    if fmt is None:
        raise refuse(part, model, "audio as WAV or MP3 only")
    return fmt


def file_name(part: DocumentContent) -> str:
    """The document's name, or ``document`` with the extension of its type (APIs want a file name)."""
    if part.name:
        return part.name
    import mimetypes  # only when a document has no name

    return "document" + (mimetypes.guess_extension(part.mime_type) or "")
