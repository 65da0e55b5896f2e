"""``tooloop sessions``: list, show, search, export, import, fork and delete stored sessions."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any

import typer

from .._render import arguments_text
from ..errors import ConflictError
from ..messages import AssistantMessage, Message, SystemMessage, ToolCallMessage, UserMessage
from ..store import BaseStore, SessionInfo
from .app import CliCommand, Debug, JsonFlag, Store, finish
from .exits import ExitCode, fail
from .ids import session_id_of
from .remember import LAST_RUN_KEY, METADATA_KEY, SessionSetup
from .setup import open_cli_store, store_url
from .terminal import Terminal

__all__ = ["sessions_app"]

sessions_app = typer.Typer(
    help="Stored sessions: list, show, search, export, import, fork, delete, path.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)

SessionId = Annotated[
    str,
    typer.Argument(metavar="ID", help="The session id, a unique start of it, or 'last' (see 'tooloop sessions list')."),
]


def _examples(*lines: str) -> str:
    return "[bold]Examples[/bold]\n\n" + "\n\n".join(f"  {line}" for line in lines)


def _with_store(url: str | None, work: Callable[[BaseStore], Coroutine[Any, Any, ExitCode | None]]) -> Any:
    async def run() -> ExitCode | None:
        async with open_cli_store(url) as store:
            return await work(store)

    return run


def _info_json(info: SessionInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "title": info.title,
        "model": info.model,
        "created_at": info.created_at.isoformat() if info.created_at else None,
        "updated_at": info.updated_at.isoformat() if info.updated_at else None,
        "message_count": info.message_count,
        "usage": {
            "input_tokens": info.usage.input_tokens,
            "output_tokens": info.usage.output_tokens,
            "requests": info.usage.requests,
            "tool_calls": info.usage.tool_calls,
        },
        "setup": SessionSetup.from_metadata(info.metadata.get(METADATA_KEY)).to_metadata(),
        "last_run": info.metadata.get(LAST_RUN_KEY),
    }


TITLE_CHARS = 60


async def _title(store: BaseStore, info: SessionInfo) -> str:
    """The session's title, else its first prompt (a first turn that failed or was cancelled has
    no title), on one line."""
    if info.title:
        return info.title
    for message in await store.load(info.id):
        if isinstance(message, UserMessage) and message.text.strip():
            line = " ".join(message.text.split())
            return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
    return "(empty)"


def _table(rows: list[list[str]]) -> str:
    """Columns padded to their widest cell (the last one is not padded)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]) for row in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


@sessions_app.command(
    "list", cls=CliCommand, epilog=_examples("tooloop sessions list", "tooloop sessions list -n 5 --json")
)
def list_(
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", help="How many, most recent first.")] = 20,
    json_: JsonFlag = False,
    store: Store = None,
    debug: Debug = False,
) -> None:
    """Sessions, most recently updated first: id, time, messages, model, title."""

    async def work(s: BaseStore) -> None:
        if limit < 1:
            fail(f"--limit must be at least 1, not {limit}")
        sessions = await s.list_sessions(limit=limit)
        if json_:
            _print_json([_info_json(i) for i in sessions])
            return
        if not sessions:
            Terminal().note("no sessions yet")
            return
        rows = [["ID", "UPDATED", "MSGS", "MODEL", "TITLE"]]
        for info in sessions:
            when = info.updated_at.strftime("%Y-%m-%d %H:%M") if info.updated_at else "-"
            title = await _title(s, info)
            rows.append([info.id, when, str(info.message_count), info.model or "-", title])
        sys.stdout.write(_table(rows))

    finish(_with_store(store, work), debug=debug)


def _ending(info: SessionInfo) -> str | None:
    """A line about the last run when it did not end with an answer (the messages may not say)."""
    record = info.metadata.get(LAST_RUN_KEY)
    if not isinstance(record, dict) or record.get("stop_reason") in (None, "end_turn"):
        return None
    error = record.get("error")
    return f"last run: {record['stop_reason']}" + (f": {error}" if error else "")


@sessions_app.command(
    cls=CliCommand,
    epilog=_examples(
        "tooloop sessions show 3f2a9c1e07b4",
        "tooloop sessions show 3f2a --full | less      # a unique prefix is enough",
        "tooloop sessions show last --json",
    ),
)
def show(
    session_id: SessionId,
    full: Annotated[bool, typer.Option("--full", help="Tool results in full, not collapsed.")] = False,
    json_: JsonFlag = False,
    store: Store = None,
    debug: Debug = False,
) -> None:
    """A session, readably: its setup, each message, tool calls with arguments and outcomes,
    usage, how it ended."""

    async def work(s: BaseStore) -> None:
        info = await s.get_session(await session_id_of(s, session_id))
        transcript = await s.load(info.id)
        if json_:
            _print_json({**_info_json(info), "messages": transcript.to_dicts()})
            return
        term = Terminal()
        limit = 0 if full else 500
        title = await _title(s, info)
        term.out.print(f"session {info.id} · {title} · {info.model or '-'}", style="bold", markup=False)
        for line in SessionSetup.from_metadata(info.metadata.get(METADATA_KEY)).lines():
            term.out.print(f"  {line}", style="dim", markup=False)
        if term.out_live:
            term.out.print(transcript.render(rich=True, usage=info.usage, max_chars=limit))
        else:
            sys.stdout.write(transcript.render(usage=info.usage, max_chars=limit) + "\n")
        ending = _ending(info)
        if ending:
            term.out.print(ending, markup=False)

    finish(_with_store(store, work), debug=debug)


@sessions_app.command(
    "path", cls=CliCommand, epilog=_examples("tooloop sessions path", "sqlite3 $(tooloop sessions path) .tables")
)
def path(store: Store = None, debug: Debug = False) -> None:
    """Where the sessions are stored: the SQLite file, or the database URL (password masked)."""

    async def work() -> None:
        from ..store import check_store_url

        url = store_url(store)
        if check_store_url(url) == "sqlite":
            sys.stdout.write(url.partition("://")[2][1:] + "\n")
        else:
            from ..store._common import masked_url

            sys.stdout.write(masked_url(url) + "\n")

    finish(work, debug=debug)


def _texts(message: Message) -> list[str]:
    if isinstance(message, SystemMessage | UserMessage):
        return [message.text]
    if isinstance(message, AssistantMessage):
        return [message.text, message.refusal or ""]
    assert isinstance(message, ToolCallMessage)
    return [message.message, message.tool_name, arguments_text(message.arguments), message.content]


def _snippet(text: str, needle: str, width: int = 60) -> str:
    at = text.lower().find(needle)
    start = max(0, at - width // 2)
    piece = " ".join(text[start : at + len(needle) + width // 2].split())
    return ("…" if start else "") + piece + "…"


@sessions_app.command(
    cls=CliCommand, epilog=_examples('tooloop sessions search "invoice"', "tooloop sessions search timeout --json")
)
def search(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="Words to find (case-insensitive, each a word start).")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many matching sessions, most recent first.")] = 50,
    json_: JsonFlag = False,
    store: Store = None,
    debug: Debug = False,
) -> None:
    """Find words in stored sessions (titles, prompts, answers, tool arguments and results) through
    the store's full-text index; prints each matching message."""
    words = text.lower().split()
    needle = words[0] if words else ""

    async def work(s: BaseStore) -> ExitCode:
        if not words:
            fail("give words to search for")
        if limit < 1:
            fail(f"--limit must be at least 1, not {limit}")
        hits: list[dict[str, Any]] = []
        for info in await s.search(text, limit=limit):  # the index finds the sessions
            for position, message in enumerate(await s.load(info.id)):
                found = next((t for t in _texts(message) if all(w in t.lower() for w in words)), None)
                if found is not None:
                    hits.append({"session_id": info.id, "index": position, "kind": message.kind, "text": found})
        if json_:
            _print_json(hits)
        for hit in [] if json_ else hits:
            sys.stdout.write(f"{hit['session_id']}  #{hit['index']} {hit['kind']}: {_snippet(hit['text'], needle)}\n")
        return ExitCode.OK if hits else ExitCode.ERROR

    finish(_with_store(store, work), debug=debug)


@sessions_app.command(
    "export",
    cls=CliCommand,
    epilog=_examples("tooloop sessions export 3f2a9c1e07b4 > chat.json", "tooloop sessions export 3f2a -o a.json"),
)
def export(
    session_id: SessionId,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (else stdout).")] = None,
    store: Store = None,
    debug: Debug = False,
) -> None:
    """A session as versioned JSON (metadata and every message), to import elsewhere."""

    async def work(s: BaseStore) -> None:
        found = await session_id_of(s, session_id)
        if output is not None:
            await s.save_to_file(found, output)
            Terminal().note(f"wrote {output}")
        else:
            _print_json(await s.export(found))

    finish(_with_store(store, work), debug=debug)


@sessions_app.command(
    "import",
    cls=CliCommand,
    epilog=_examples("tooloop sessions import chat.json", "cat chat.json | tooloop sessions import - --id copy-1"),
)
def import_(
    file: Annotated[str, typer.Argument(metavar="FILE", help="An export file, or - for standard input.")],
    new_id: Annotated[str | None, typer.Option("--id", help="Store it under this id (default: its own).")] = None,
    store: Store = None,
    debug: Debug = False,
) -> None:
    """Create a session from an export file; prints its id."""

    async def work(s: BaseStore) -> None:
        raw = sys.stdin.buffer.read() if file == "-" else await asyncio.to_thread(Path(file).read_bytes)
        where = "standard input" if file == "-" else file
        try:
            data = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            fail(f"{where} is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}): an export is UTF-8 JSON")
        try:
            sys.stdout.write(await s.import_(data, session_id=new_id) + "\n")
        except ConflictError as exc:
            fail(f"{exc} in this store: import it under another id with --id NEW_ID")

    finish(_with_store(store, work), debug=debug)


@sessions_app.command(
    cls=CliCommand,
    epilog=_examples("tooloop sessions fork 3f2a9c1e07b4", "tooloop sessions fork 3f2a9c1e07b4 --at 4 --id retry"),
)
def fork(
    session_id: SessionId,
    at: Annotated[int | None, typer.Option("--at", help="Keep the first N messages (default: all).")] = None,
    new_id: Annotated[str | None, typer.Option("--id", help="Id of the new session (default: generated).")] = None,
    store: Store = None,
    debug: Debug = False,
) -> None:
    """A new session holding the first messages of another; prints its id."""

    async def work(s: BaseStore) -> None:
        info = await s.get_session(await session_id_of(s, session_id))
        count = info.message_count if at is None else at
        if not 0 <= count <= info.message_count:
            fail(f"--at must be between 0 and {info.message_count} (the session's messages), not {count}")
        sys.stdout.write(await s.fork(info.id, count, new_id) + "\n")

    finish(_with_store(store, work), debug=debug)


@sessions_app.command(cls=CliCommand, epilog=_examples("tooloop sessions delete 3f2a9c1e07b4"))
def delete(session_id: SessionId, store: Store = None, debug: Debug = False) -> None:
    """Remove a session and its messages."""

    async def work(s: BaseStore) -> None:
        found = await session_id_of(s, session_id)
        await s.delete(found)
        Terminal().note(f"deleted {found}")

    finish(_with_store(store, work), debug=debug)
