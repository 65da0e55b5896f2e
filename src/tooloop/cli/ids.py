"""Session ids as people type them: in full, by a unique prefix, or ``last``."""

from __future__ import annotations

from ..errors import SessionNotFoundError
from ..store import BaseStore
from .exits import ExitCode, fail

__all__ = ["LAST", "find_session", "last_session_id", "session_id_of"]

LAST = "last"
"""The id that names the most recently updated session."""

_PAGE = 500


async def last_session_id(store: BaseStore) -> str:
    """The most recently updated session (``-c``, ``last``)."""
    sessions = await store.list_sessions(limit=1)
    if not sessions:
        fail("no session to continue yet: start one with 'tooloop run \"...\"' or 'tooloop chat'")
    return sessions[0].id


async def _with_prefix(store: BaseStore, prefix: str) -> list[str]:
    found: list[str] = []
    offset = 0
    while True:
        page = await store.list_sessions(limit=_PAGE, offset=offset)
        found.extend(info.id for info in page if info.id.startswith(prefix))
        if len(page) < _PAGE or len(found) > 1:
            return found
        offset += _PAGE


async def find_session(store: BaseStore, given: str) -> str | None:
    """The stored session ``given`` names (its id, a unique prefix of it, or ``last``); None
    when no stored session matches. Two sessions sharing the prefix is a usage error naming them."""
    if given == LAST:
        return await last_session_id(store)
    try:
        return (await store.get_session(given)).id
    except SessionNotFoundError:
        pass
    matches = await _with_prefix(store, given) if given else []
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        fail(f"session id {given!r} is the start of several sessions ({shown}): give more of it")
    return matches[0] if matches else None


async def session_id_of(store: BaseStore, given: str) -> str:
    """Like :func:`find_session`, but a session that does not exist is a usage error."""
    found = await find_session(store, given)
    if found is None:
        fail(f"no session {given!r} in this store (see 'tooloop sessions list')", ExitCode.ERROR)
    return found
