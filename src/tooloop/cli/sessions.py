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
from ..messages import AssistantMessage, Message, SystemMessage, ToolCallMessage, UserMessage
from ..store import BaseStore, SessionInfo, open_store
from .app import Debug, JsonFlag, Store, finish
from .exits import ExitCode, fail
from .setup import store_url
from .terminal import Terminal

__all__ = ["sessions_app"]

sessions_app = typer.Typer(
    help="Stored sessions: list, show, search, export, import, fork, delete.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)

SessionId = Annotated[str, typer.Argument(metavar="ID", help="The session id (see 'tooloop sessions list').")]


def _examples(*lines: str) -> str:
    return "[bold]Examples[/bold]\n\n" + "\n\n".join(f"  {line}" for line in lines)


def _with_store(url: str | None, work: Callable[[BaseStore], Coroutine[Any, Any, ExitCode | None]]) -> Any:
    async def run() -> ExitCode | None:
        async with open_store(store_url(url)) as store:
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
    }


def _info_line(info: SessionInfo) -> str:
    when = info.updated_at.strftime("%Y-%m-%d %H:%M") if info.updated_at else "-"
    title = info.title or "(untitled)"
    return f"{info.id}  {when}  {info.message_count:>4} msgs  {info.model or '-'}  {title}"


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


@sessions_app.command("list", epilog=_examples("tooloop sessions list", "tooloop sessions list --limit 5 --json"))
def list_(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many, most recent first.")] = 20,
    json_: JsonFlag = False,
    store: Store = None,
    debug: Debug = False,
) -> None:
    """Sessions, most recently updated first: id, time, messages, model, title."""

    async def work(s: BaseStore) -> None:
        sessions = await s.list_sessions(limit=limit)
        if json_:
            _print_json([_info_json(i) for i in sessions])
            return
        if not sessions:
            Terminal().note("no sessions yet")
        for info in sessions:
            sys.stdout.write(_info_line(info) + "\n")

    finish(_with_store(store, work), debug=debug)


@sessions_app.command(
    epilog=_examples("tooloop sessions show 3f2a9c1e07b4", "tooloop sessions show 3f2a9c1e07b4 --full | less")
)
def show(
    session_id: SessionId,
    full: Annotated[bool, typer.Option("--full", help="Tool results in full, not collapsed.")] = False,
    json_: JsonFlag = False,
    store: Store = None,
    debug: Debug = False,
) -> None:
    """A session, readably: each message, tool calls with arguments and outcomes, usage, how it ended."""

    async def work(s: BaseStore) -> None:
        info = await s.get_session(session_id)
        transcript = await s.load(session_id)
        if json_:
            _print_json({**_info_json(info), "messages": transcript.to_dicts()})
            return
        term = Terminal()
        limit = 0 if full else 500
        term.out.print(f"session {info.id} · {info.title or '(untitled)'} · {info.model or '-'}", style="bold")
        if term.out_live:
            term.out.print(transcript.render(rich=True, usage=info.usage, max_chars=limit))
        else:
            sys.stdout.write(transcript.render(usage=info.usage, max_chars=limit) + "\n")

    finish(_with_store(store, work), debug=debug)


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


@sessions_app.command(epilog=_examples('tooloop sessions search "invoice"', "tooloop sessions search timeout --json"))
def search(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="Text to find (case-insensitive).")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="Sessions to look through, most recent first.")] = 200,
    json_: JsonFlag = False,
    store: Store = None,
    debug: Debug = False,
) -> None:
    """Find text in the messages of stored sessions (prompts, answers, tool arguments and results)."""
    needle = text.lower()

    async def work(s: BaseStore) -> ExitCode:
        hits: list[dict[str, Any]] = []
        for info in await s.list_sessions(limit=limit):
            for position, message in enumerate(await s.load(info.id)):
                found = next((t for t in _texts(message) if needle in t.lower()), None)
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
        if output is not None:
            await s.save_to_file(session_id, output)
            Terminal().note(f"wrote {output}")
        else:
            _print_json(await s.export(session_id))

    finish(_with_store(store, work), debug=debug)


@sessions_app.command(
    "import",
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
        source = sys.stdin if file == "-" else None
        data = source.read() if source is not None else await asyncio.to_thread(Path(file).read_text, "utf-8")
        sys.stdout.write(await s.import_(data, session_id=new_id) + "\n")

    finish(_with_store(store, work), debug=debug)


@sessions_app.command(
    epilog=_examples("tooloop sessions fork 3f2a9c1e07b4", "tooloop sessions fork 3f2a9c1e07b4 --at 4 --id retry")
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
        info = await s.get_session(session_id)
        count = info.message_count if at is None else at
        if not 0 <= count <= info.message_count:
            fail(f"--at must be between 0 and {info.message_count} (the session's messages), not {count}")
        sys.stdout.write(await s.fork(session_id, count, new_id) + "\n")

    finish(_with_store(store, work), debug=debug)


@sessions_app.command(epilog=_examples("tooloop sessions delete 3f2a9c1e07b4"))
def delete(session_id: SessionId, store: Store = None, debug: Debug = False) -> None:
    """Remove a session and its messages."""

    async def work(s: BaseStore) -> None:
        await s.delete(session_id)
        Terminal().note(f"deleted {session_id}")

    finish(_with_store(store, work), debug=debug)
