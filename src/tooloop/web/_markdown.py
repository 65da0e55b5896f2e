"""Markdown to HTML that is safe to show: raw HTML in the text is escaped, never passed through."""

from __future__ import annotations

from functools import lru_cache

from markdown_it import MarkdownIt
from markupsafe import Markup

__all__ = ["render_markdown"]


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # "html": False escapes any tag in the text; markdown-it refuses javascript:, vbscript:,
    # file: and data: (but images) links on its own.
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")


def render_markdown(text: str) -> Markup:
    """``text`` rendered as Markdown; any HTML it contains shows as text."""
    return Markup(_parser().render(text))  # the parser escaped everything it did not generate
