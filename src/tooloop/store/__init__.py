"""Durable sessions: the ``Store`` protocol, SQLite (default) and PostgreSQL backends.

``open_store("sqlite:///sessions.db")`` or ``open_store("postgresql://...")`` returns a store that
connects on first use; ``async with open_store(url) as store:`` closes it afterwards.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError
from ._common import BaseStore
from .base import UNSET, Progress, SessionInfo, Store, Write
from .exchange import EXPORT_FORMAT, EXPORT_VERSION
from .journal import SessionLease

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "UNSET",
    "BaseStore",
    "Progress",
    "SessionInfo",
    "SessionLease",
    "Store",
    "Write",
    "check_store_url",
    "open_store",
]


def open_store(url: str, **options: Any) -> BaseStore:
    """The store for ``url``: ``sqlite:///path.db``, ``sqlite:///:memory:`` or ``postgresql://...``.

    ``options`` go to the backend (``SQLiteStore`` or ``PostgresStore``). The PostgreSQL backend
    needs the ``postgres`` extra and is imported only when asked for.
    """
    scheme = check_store_url(url)
    if scheme == "sqlite":
        from .sqlite import SQLiteStore

        return SQLiteStore.from_url(url, **options)
    if scheme in ("postgresql", "postgres"):
        from .postgres import PostgresStore

        return PostgresStore.from_url(url, **options)
    raise AssertionError(scheme)  # check_store_url admits only the schemes above


def check_store_url(url: str) -> str:
    """The scheme of a store URL (``sqlite`` or ``postgresql``); a malformed URL is a
    :class:`~tooloop.errors.ConfigurationError` (``sqlite:x.db`` is not a path named ``sqlite:x.db``)."""
    scheme, sep, rest = url.partition(":")
    scheme = scheme.lower()
    if sep and rest.startswith("//") and scheme in ("sqlite", "postgresql", "postgres"):
        return "sqlite" if scheme == "sqlite" else "postgresql"
    raise ConfigurationError(
        f"unknown store URL {url!r}: use sqlite:///path.db (three slashes, then the path), "
        "sqlite:///:memory: or postgresql://user@host/database"
    )
