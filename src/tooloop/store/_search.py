"""What the SQL backends share to search sessions: the query's words, filters and order."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ArgumentValueError
from .base import SESSION_ORDERS

__all__ = ["SearchQuery"]

_WORD = re.compile(r"\w+")
_MAX_WORDS = 32


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A checked :meth:`~tooloop.store.Store.search` call."""

    words: tuple[str, ...]
    model: str | None
    stop_reason: str | None
    errors_only: bool
    order_by: str
    descending: bool
    limit: int
    offset: int

    @classmethod
    def of(cls, text: str, **options: Any) -> SearchQuery:
        """Check the arguments of ``search`` and split ``text`` into words (punctuation separates)."""
        if not isinstance(text, str):
            raise ArgumentValueError(f"search(text=...) must be a string, got {type(text).__name__}")
        order_by = options["order_by"]
        if order_by not in SESSION_ORDERS:
            raise ArgumentValueError(f"search(order_by={order_by!r}) is not one of {', '.join(SESSION_ORDERS)}")
        for name in ("limit", "offset"):
            value = options[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ArgumentValueError(f"search({name}={value!r}) must be a whole number of 0 or more")
        words = tuple(_WORD.findall(text.lower()))[:_MAX_WORDS]
        return cls(words=words, **options)

    def conditions(self, match: str, match_value: str, placeholder: str) -> tuple[str, list[Any]]:
        """The WHERE clause and its parameters; ``match`` is the backend's full-text condition on
        ``match_value`` (used only when there are words)."""
        where: list[str] = []
        params: list[Any] = []
        if self.words:
            where.append(match)
            params.append(match_value)
        if self.model is not None:
            where.append(f"model = {placeholder}")
            params.append(self.model)
        if self.stop_reason is not None:
            where.append(f"stop_reason = {placeholder}")
            params.append(self.stop_reason)
        if self.errors_only:
            where.append("errors > 0")
        return ("WHERE " + " AND ".join(where)) if where else "", params

    def order(self, columns: Mapping[str, str], nullable: frozenset[str] = frozenset()) -> str:
        """The ORDER BY clause: ties broken by id (so pages never repeat a session), ascending the
        exact reverse of descending, so one index ``(column DESC, id)`` serves both directions.

        An unknown value (NULL) sorts as the smallest, as SQLite does; ``nullable`` names the
        columns that need it said (PostgreSQL sorts NULL as the largest).
        """
        column = columns.get(self.order_by, self.order_by)
        if self.descending:
            nulls = " NULLS LAST" if self.order_by in nullable else ""
            return f"ORDER BY {column} DESC{nulls}, id"
        nulls = " NULLS FIRST" if self.order_by in nullable else ""
        return f"ORDER BY {column} ASC{nulls}, id DESC"
