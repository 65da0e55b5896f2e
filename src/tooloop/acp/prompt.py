"""An ACP prompt (a list of content blocks) as the text of one user message.

Text and resource links are always accepted (the protocol's baseline). Embedded resources are
accepted because the server advertises ``embeddedContext``: their text goes to the model inside
a block naming the resource. Images and audio are not advertised (tooloop's user messages are
text), so a prompt carrying them is refused with ``-32602`` instead of being silently dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp import RequestError, schema

__all__ = ["prompt_text"]


def prompt_text(blocks: Sequence[Any]) -> str:
    """The user message for ``blocks``; raises ``RequestError`` (-32602) for content not accepted."""
    parts = [_block_text(block) for block in blocks]
    text = "\n\n".join(part for part in parts if part)
    if not text.strip():
        raise RequestError.invalid_params({"details": "the prompt is empty"})
    return text


def _block_text(block: Any) -> str:
    if isinstance(block, schema.TextContentBlock):
        return block.text
    if isinstance(block, schema.ResourceContentBlock):
        return _link(block)
    if isinstance(block, schema.EmbeddedResourceContentBlock):
        return _embedded(block.resource)
    kind = getattr(block, "type", type(block).__name__)
    raise RequestError.invalid_params(
        {"details": f"{kind!r} content is not accepted: this agent advertises text, resource_link and resource"}
    )


def _link(block: schema.ResourceContentBlock) -> str:
    about = [block.title or block.name]
    if block.mime_type:
        about.append(block.mime_type)
    if block.description:
        about.append(block.description)
    return f"[resource link: {block.uri} ({'; '.join(about)})]"


def _embedded(resource: schema.TextResourceContents | schema.BlobResourceContents) -> str:
    if isinstance(resource, schema.TextResourceContents):
        mime = f' mimeType="{resource.mime_type}"' if resource.mime_type else ""
        return f'<resource uri="{resource.uri}"{mime}>\n{resource.text}\n</resource>'
    raise RequestError.invalid_params(
        {"details": f"binary resource {resource.uri!r} is not accepted: only text resources can be embedded"}
    )
