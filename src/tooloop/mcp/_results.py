"""MCP tool results as tooloop values: content parts, structured content, and failures."""

from __future__ import annotations

from mcp import types

from ..errors import ToolError
from ..messages import (
    AudioContent,
    ContentPart,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolOutput,
)
from ..outcome import render_parts

__all__ = ["to_output", "to_part"]


def to_output(result: types.CallToolResult) -> ToolOutput:
    """The tool's outcome; a result flagged ``isError`` raises :class:`ToolError` with its text."""
    parts = tuple(to_part(block) for block in result.content)
    if result.is_error:
        raise ToolError(render_parts(parts) or "the tool reported an error without details")
    return ToolOutput(parts=parts, structured=result.structured_content)


def to_part(block: types.ContentBlock) -> ContentPart:
    """One MCP content block as a content part."""
    if isinstance(block, types.TextContent):
        return TextContent(block.text)
    if isinstance(block, types.ImageContent):
        return ImageContent(block.data, block.mime_type)
    if isinstance(block, types.AudioContent):
        return AudioContent(block.data, block.mime_type)
    if isinstance(block, types.ResourceLink):
        return ResourceLink(
            uri=str(block.uri),
            name=block.name,
            title=block.title,
            description=block.description,
            mime_type=block.mime_type,
            size=block.size,
        )
    resource = block.resource
    if isinstance(resource, types.TextResourceContents):
        return EmbeddedResource(uri=str(resource.uri), mime_type=resource.mime_type, text=resource.text)
    return EmbeddedResource(uri=str(resource.uri), mime_type=resource.mime_type, blob=resource.blob)
