"""``tooloop run``: one conversation turn from the command line, streamed, recorded in a session."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .._children import kill_all
from .._json import to_jsonable
from .._render import usage_text
from ..agent import Agent
from ..errors import ToolloopError
from ..loop.frontdoors import EventStream
from ..loop.result import RunResult
from ..messages import StopReason, Usage, UserPart
from ..transcript import Transcript
from .approvals import Approve, Asker, CommandApprover, read_line
from .exits import ExitCode, exit_code_for_stop, fail
from .remember import last_run, save_setup
from .setup import AgentOptions, ModelChoice, open_cli_store, open_session, start_session
from .terminal import Terminal
from .typeahead import restore_keyboard
from .view import TurnView

__all__ = ["RunOptions", "drive", "read_prompt", "result_json", "run_command", "sigint_cancels"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """``tooloop run``'s options besides the agent's."""

    prompt: str | tuple[UserPart, ...] | None
    """The question, or its parts when there are attachments (``-a``, ``-f``)."""
    agent: AgentOptions
    session: str | None = None
    continue_last: bool = False
    approve: Approve = Approve.ASK
    json: bool = False
    store: str | None = None


def decode_text(data: bytes, encoding: str, what: str) -> str:
    """``data`` as text in ``encoding``; binary data (a NUL byte) or a byte the encoding cannot
    read is a usage error naming its offset."""
    nul = data.find(b"\0")
    if nul >= 0:
        fail(f"{what} looks binary (a NUL byte at offset {nul}): give text")
    try:
        return data.decode(encoding)
    except LookupError:
        fail(f"--encoding {encoding!r}: no such encoding (e.g. utf-8, latin-1, cp1252)")
    except UnicodeDecodeError as exc:
        byte = data[exc.start]
        fail(
            f"{what} is not {encoding}: byte 0x{byte:02x} at offset {exc.start}; "
            "pass --encoding NAME (e.g. --encoding latin-1) to read it in another encoding"
        )


def prompt_argument(argument: str | None, encoding: str = "utf-8") -> str | None:
    """The prompt argument as the user typed it: bytes the shell passed that are not valid in the
    locale's encoding are read in ``encoding`` (or refused with their offset)."""
    if argument is None:
        return None
    if not any("\udc80" <= c <= "\udcff" for c in argument):  # every byte was valid
        return argument
    return decode_text(os.fsencode(argument), encoding, "the prompt argument")


def read_prompt(argument: str | None, stdin: Any = None, encoding: str = "utf-8") -> str | None:
    """The prompt: the argument, with piped standard input appended (or alone). Standard input is
    read as ``encoding`` (UTF-8 unless ``--encoding`` says otherwise)."""
    argument = prompt_argument(argument, encoding)
    stdin = stdin if stdin is not None else sys.stdin
    piped = ""
    if stdin is not None and not stdin.isatty():
        source = getattr(stdin, "buffer", None)
        piped = decode_text(source.read(), encoding, "standard input") if source is not None else stdin.read()
    if piped.strip():
        return f"{argument}\n\n{piped}" if argument else piped
    return argument


@contextmanager
def sigint_cancels(cancel: Callable[[], None], term: Terminal) -> Iterator[None]:
    """While inside: Ctrl-C (or SIGTERM, see ``main``) cancels the run (it ends ``cancelled``,
    its session kept); a second Ctrl-C exits at once (everything recorded so far stays in the
    store; MCP servers are killed)."""
    loop = asyncio.get_running_loop()
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            cancel()
            return
        term.stdout.flush()
        term.err.show_cursor(True)
        restore_keyboard()  # keys typed during a chat's turn: the terminal's own mode again
        kill_all()  # os._exit runs no exit handlers: stop the MCP servers now
        os._exit(ExitCode.CANCELLED)

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError):  # no signal handlers here (Windows, a thread)
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def _failed(error: ToolloopError) -> RunResult:
    transcript = error.transcript if error.transcript is not None else Transcript()
    return RunResult(transcript=transcript, stop_reason=StopReason.ERROR, usage=error.usage or Usage(), error=error)


async def drive(stream: EventStream, view: TurnView, term: Terminal) -> RunResult:
    """Run ``stream`` to its end, showing it; a failure comes back as ``result.error``."""
    with sigint_cancels(lambda: stream.cancel("cancelled by Ctrl-C"), term):
        try:
            async with stream:
                async for event in stream:
                    view.handle(event)
        except ToolloopError as exc:
            return _failed(exc)
        finally:
            view.close()
    assert stream.result is not None
    return stream.result


def _usage_json(usage: Usage) -> dict[str, Any]:
    """The usage's counts and cost; ``estimated`` only when some tokens are an estimate."""
    data: dict[str, Any] = to_jsonable(usage)
    if not usage.estimated:
        data.pop("estimated", None)
    return data


def result_json(result: RunResult, *, session_id: str, model: str) -> dict[str, Any]:
    """What ``--json`` prints: the run's result as one JSON object."""
    usage = result.usage
    return {
        "text": result.text,
        "output": to_jsonable(result.output),
        "stop_reason": result.stop_reason.value,
        "session_id": session_id,
        "model": model,
        "usage": {**_usage_json(usage), "total_tokens": usage.total_tokens},
        "tool_calls": [
            {
                "id": call.tool_call_id,
                "name": call.tool_name,
                "arguments": to_jsonable(call.arguments),
                "status": call.status.value,
                "content": call.content,
                "error_type": call.error_type,
            }
            for call in result.tool_calls
        ],
        "pending_approvals": [request.to_dict() for request in result.pending_approvals],
        "error": None if result.error is None else {"type": type(result.error).__name__, "message": str(result.error)},
        "messages": result.new_messages.to_dicts(),
    }


def terminal_asker(term: Terminal) -> Asker | None:
    """Reads answers from the terminal even when standard input is a pipe; None without one."""
    if sys.stdin.isatty():
        source = sys.stdin
    elif term.err_live:
        try:
            source = open("/dev/tty", encoding="utf-8")  # kept open for the process
        except OSError:
            return None
    else:
        return None

    async def ask(question: str) -> str | None:
        term.err.print(question, end="", markup=False)
        return await read_line(source)

    return ask


def _announce(term: Terminal, choice: ModelChoice, session_id: str, agent: str | None) -> None:
    why = "" if choice.reason == "--model" else f" ({choice.reason})"
    who = f"agent {agent} · " if agent and choice.reason != f"agent {agent}" else ""  # said once
    term.note(f"{who}model {choice.spec}{why} · session {session_id}")


def _report(term: Terminal, result: RunResult, session_id: str) -> None:
    reason = result.stop_reason
    term.note(f"{reason.value} · {usage_text(result.usage)}")
    if reason is StopReason.APPROVAL_REQUIRED:
        names = ", ".join(sorted({r.tool_name for r in result.pending_approvals}))
        term.error(
            f"{len(result.pending_approvals)} tool call(s) wait for approval ({names}); decide with "
            f"'tooloop run --session {session_id} --approve all' (or --approve none), or run in a terminal"
        )
    elif reason is StopReason.MAX_TURN_REQUESTS:
        term.error(f"stopped after the maximum number of turns; continue with 'tooloop run --session {session_id}'")
    elif reason is StopReason.CANCELLED:
        term.error(f"cancelled; the session is kept: continue with 'tooloop run --session {session_id}'")
    elif reason not in (StopReason.END_TURN, StopReason.ERROR):
        why = f": {result.stop_text}" if result.stop_text else ""
        term.error(f"the run stopped: {reason.value}{why}")


async def run_command(options: RunOptions, term: Terminal) -> ExitCode:
    """Run one turn and print it; returns the exit code."""
    if isinstance(options.prompt, str) and not options.prompt.strip():
        fail('the prompt is empty: tooloop run "your question" (or --session ID / -c without one to go on)')
    async with open_cli_store(options.store) as store:
        session_id, new = await open_session(store, options.session, options.continue_last, term)
        if options.prompt is None and new:
            fail('give a prompt: tooloop run "your question" (or pipe text in: cat notes.md | tooloop run "summarise")')
        start = await start_session(store, options.agent, session_id, term)
        _announce(term, start.choice, session_id, start.agent.name)
        schema = bool(start.setup.schema)  # --schema, or the session's: the answer is printed as JSON
        async with start.agent:  # starts its MCP servers, and stops them however the run ends
            result = await _one_turn(start.agent, options, term, schema=schema)
        await save_setup(store, session_id, start.setup, last_run(result.stop_reason.value, result.error))
    if options.json:
        data = result_json(result, session_id=session_id, model=start.choice.spec)
        term.answer(json.dumps(data, ensure_ascii=False) + "\n")
    elif schema and result.output is not None:
        term.answer(json.dumps(to_jsonable(result.output), ensure_ascii=False, indent=2) + "\n")
    if result.error is not None:
        raise result.error
    _report(term, result, session_id)
    return exit_code_for_stop(result.stop_reason)


async def _one_turn(agent: Agent, options: RunOptions, term: Terminal, *, schema: bool) -> RunResult:
    has_tools = bool(agent.tools or agent.tool_sources)
    # with a schema the answer is printed once validated, as JSON
    view = TurnView(term, show_answer=not options.json and not schema, has_tools=has_tools)
    holder: list[EventStream] = []
    ask = terminal_asker(term) if options.approve is Approve.ASK else None
    approver = CommandApprover(options.approve, view, ask, lambda: holder[0].cancel("cancelled at an approval"))
    stream = agent.stream(options.prompt, approve=approver if approver.can_decide else None)
    holder.append(stream)
    return await drive(stream, view, term)
