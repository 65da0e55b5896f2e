"""An ACP prompt (a list of content blocks) as one user message: its text, or its content parts.

Text and resource links are always accepted (the protocol's baseline). Embedded resources are
accepted because the server advertises ``embeddedContext``: a text resource goes to the model
inside a block naming it; a binary one as an image, audio or a document by its MIME type. Images
and audio are advertised, and accepted, when the agent's model takes them; content the model
cannot take is refused with ``-32602`` naming it, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from acp import RequestError, schema

from ..messages import AudioContent, DocumentContent, ImageContent, TextContent, UserPart
from ..models.inputs import kinds_text

__all__ = ["prompt_content"]


def prompt_content(blocks: Sequence[Any], kinds: frozenset[str]) -> str | tuple[UserPart, ...]:
    """The user message for ``blocks``: its text when it is all text, else its parts in order.

    ``kinds`` are the attachment kinds the model takes (``"image"``, ``"audio"``, ``"document"``);
    raises ``RequestError`` (-32602) for content outside them, or an empty prompt.
    """
    parts = [_part(block, kinds) for block in blocks]
    if all(isinstance(part, TextContent) for part in parts):
        text = "\n\n".join(part.text for part in parts if isinstance(part, TextContent) and part.text)
        if not text.strip():
            raise RequestError.invalid_params({"details": "the prompt is empty"})
        return text
    return tuple(part for part in parts if not isinstance(part, TextContent) or part.text)


def _part(block: Any, kinds: frozenset[str]) -> UserPart:
    if isinstance(block, schema.TextContentBlock):
        return TextContent(block.text)
    if isinstance(block, schema.ResourceContentBlock):
        return TextContent(_link(block))
    if isinstance(block, schema.EmbeddedResourceContentBlock):
        return _embedded(block.resource, kinds)
    if isinstance(block, schema.ImageContentBlock):
        return _accepted(ImageContent(block.data, block.mime_type), kinds)
    if isinstance(block, schema.AudioContentBlock):
        return _accepted(AudioContent(block.data, block.mime_type), kinds)
    kind = getattr(block, "type", type(block).__name__)
    raise RequestError.invalid_params({"details": f"{kind!r} content is not accepted: {_advertised(kinds)}"})


def _accepted(
    part: ImageContent | AudioContent | DocumentContent, kinds: frozenset[str]
) -> ImageContent | AudioContent | DocumentContent:
    if part.kind not in kinds:
        what = f"{part.kind} content ({part.mime_type})"
        raise RequestError.invalid_params(
            {"details": f"{what} is not accepted: the model takes {kinds_text(kinds)}; {_advertised(kinds)}"}
        )
    return part


def _advertised(kinds: frozenset[str]) -> str:
    media = [kind for kind in ("image", "audio") if kind in kinds]
    return f"this agent advertises {', '.join(['text', *media, 'resource_link', 'resource'])}"


def _link(block: schema.ResourceContentBlock) -> str:
    about = [block.title or block.name]
    if block.mime_type:
        about.append(block.mime_type)
    if block.description:
        about.append(block.description)
    return f"[resource link: {block.uri} ({'; '.join(about)})]"


def _embedded(resource: schema.TextResourceContents | schema.BlobResourceContents, kinds: frozenset[str]) -> UserPart:
    if isinstance(resource, schema.TextResourceContents):
        mime = f' mimeType="{resource.mime_type}"' if resource.mime_type else ""
        return TextContent(f'<resource uri="{resource.uri}"{mime}>\n{resource.text}\n</resource>')
    mime_type = resource.mime_type or "application/octet-stream"
    part: ImageContent | AudioContent | DocumentContent
    if mime_type.startswith("image/"):
        part = ImageContent(resource.blob, mime_type)
    elif mime_type.startswith("audio/"):
        part = AudioContent(resource.blob, mime_type)
    else:
        part = DocumentContent(resource.blob, mime_type, _file_name(resource.uri))
    return _accepted(part, kinds)


def _file_name(uri: str) -> str | None:
    """The last path segment of a resource's URI (``file:///a/report.pdf`` -> ``report.pdf``)."""
    name = PurePosixPath(urlsplit(uri).path).name
    return name or None
