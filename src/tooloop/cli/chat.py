"""``tooloop chat``: an interactive conversation recorded in a session.

Each turn is one run of the agent on the session. Ctrl-C during a turn cancels that turn (it
ends ``cancelled``, the session keeps everything so far); at the prompt, Ctrl-C twice or Ctrl-D
quits. Lines starting with ``/`` are commands (:data:`COMMANDS`).

On a terminal the user may type while a turn runs (:mod:`.typeahead`): a line is sent into the
run as steering (delivered at the next safe boundary, shown ``queued`` then ``delivered``); a line
finished after the run ended, or a ``/command``, is handled once the turn is over, as if typed at
the prompt; steering the run stopped before delivering (a cancel, a limit) comes back in the
prompt, to send or edit.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from .._children import terminating
from .._json import to_jsonable
from .._render import usage_text
from ..agent import Agent
from ..errors import ToolloopError, UnsupportedContentError
from ..loop.frontdoors import EventStream
from ..messages import StopReason, Usage, UserMessage
from ..models.inputs import check_prompt_inputs
from ..store import BaseStore
from .approvals import Approve, CommandApprover, read_line
from .attach import NO_ATTACHMENTS, Attachments
from .exits import ExitCode, describe, fail
from .remember import SessionSetup, last_run, save_setup
from .run import drive
from .setup import AgentOptions, model_label, new_session_id, open_cli_store, open_session, start_session
from .terminal import Terminal
from .typeahead import Typeahead
from .view import TurnView

__all__ = ["COMMANDS", "ChatOptions", "chat_command"]

PROMPT = "you> "

COMMANDS = {
    "/help": "show these commands",
    "/model [PROVIDER:MODEL]": "show the model, or switch to another one (the session goes on)",
    "/tools": "the tools the model can call",
    "/usage": "tokens and requests of the last turn and of the whole session",
    "/new": "start a new session",
    "/session": "the session id (continue it later with: tooloop chat --session ID)",
    "/exit": "quit (also /quit, Ctrl-D, or Ctrl-C twice)",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatOptions:
    """``tooloop chat``'s options besides the agent's."""

    agent: AgentOptions
    session: str | None = None
    continue_last: bool = False
    approve: Approve = Approve.ASK
    store: str | None = None
    attachments: Attachments = NO_ATTACHMENTS
    """``-a`` and ``-f``: sent with the first message."""


class _Lines:
    """Reads the user's lines: prompt_toolkit on a terminal (editing, history), plain lines otherwise."""

    def __init__(self, term: Terminal):
        self.term = term
        self.interactive = sys.stdin.isatty() and term.err_live
        self._session = None
        if self.interactive:
            from prompt_toolkit import PromptSession

            self._session = PromptSession[str]()

    async def read(self, prompt: str, default: str = "") -> str | None:
        """A line (on a terminal, ``default`` is already typed); None at end of input.
        KeyboardInterrupt when Ctrl-C is pressed at the prompt."""
        if self._session is None:
            return await read_line(sys.stdin)
        try:
            return await self._session.prompt_async(prompt, default=default, handle_sigint=False)
        except EOFError:
            return None

    async def ask(self, question: str) -> str | None:
        """An answer to a question asked during a turn (approvals)."""
        if self._session is None:
            self.term.err.print(question, end="", markup=False)
        return await self.read(question)


class Chat:
    """The state of one chat: the agent, its session, the approver, the last turn's usage."""

    def __init__(
        self, agent: Agent, setup: SessionSetup, session_id: str, store: BaseStore, term: Terminal, lines: _Lines
    ):
        self.agent = agent
        self.setup = setup
        self.model = setup.model or model_label(agent.model)
        self.session_id = session_id
        self.store = store
        self.term = term
        self.lines = lines
        self.last_usage = Usage()
        self._stream: EventStream | None = None
        self.approver: CommandApprover | None = None
        self.attachments = NO_ATTACHMENTS
        self.pending: list[str] = []
        """Lines typed during a turn that wait for it to end (follow-ups, /commands), in order."""
        self.draft = ""
        """Text for the next prompt: steering that was never delivered, a line left unfinished."""

    async def turn(self, text: str, approve: Approve) -> None:
        """One run of the agent on the session, shown as it happens."""
        schema = bool(self.setup.schema)  # each answer printed once validated, as JSON
        view = TurnView(self.term, show_answer=not schema)
        if self.approver is None:
            self.approver = CommandApprover(approve, view, self.lines.ask, self._cancel)
        self.approver.view = view
        prompt = self.attachments.prompt(text)
        try:
            stream = self.agent.stream(prompt, approve=self.approver if self.approver.can_decide else None)
        except UnsupportedContentError as exc:  # an attachment this model cannot take: nothing was sent
            self.term.error(describe(exc))
            return
        self.attachments = NO_ATTACHMENTS
        self._stream = stream
        keys = self._typeahead(stream, view)
        try:
            await self._run(stream, view, schema)
        finally:
            if keys is not None:
                keys.pause()
            self._left_over(stream, keys)

    def _typeahead(self, stream: EventStream, view: TurnView) -> Typeahead | None:
        """Reads what the user types while the turn runs (on a terminal)."""
        if not self.lines.interactive or not Typeahead.available(sys.stdin.fileno()):
            return None

        def line(text: str) -> None:
            if text.startswith("/"):
                self.pending.append(text)
                view.after_turn(text)
            elif stream.steer(text):
                view.queued(text)
            else:  # the run has ended: the line starts the next turn
                self.pending.append(text)

        keys = Typeahead(sys.stdin.fileno(), line, view.typed, self.draft)
        self.draft = ""
        view.keyboard = keys
        keys.resume()
        return keys

    def _left_over(self, stream: EventStream, keys: Typeahead | None) -> None:
        """Steering the run never delivered comes back in the next prompt, with an unfinished line."""
        for text in stream.undelivered:
            self.term.show(f"not delivered (the turn stopped), back in your prompt: {text}", "yellow")
        left = [*stream.undelivered, keys.draft if keys is not None else ""]
        self.draft = "\n".join(text for text in left if text)

    async def _run(self, stream: EventStream, view: TurnView, schema: bool) -> None:
        result = await drive(stream, view, self.term)
        self.last_usage = result.usage
        await save_setup(self.store, self.session_id, self.setup, last_run(result.stop_reason.value, result.error))
        if result.error is not None:
            self.term.error(describe(result.error))
            return
        if schema and result.output is not None:
            self.term.answer(json.dumps(to_jsonable(result.output), ensure_ascii=False, indent=2) + "\n")
        reason = result.stop_reason
        self.term.note(f"{reason.value} · {usage_text(result.usage)}")
        if reason is StopReason.CANCELLED:
            self.term.show("turn cancelled; the session goes on", "yellow")

    def _cancel(self) -> None:
        if self._stream is not None:
            self._stream.cancel("cancelled at an approval")

    # ------------------------------------------------------------------ /commands

    async def command(self, line: str) -> bool:
        """Run a /command; False when the chat should end."""
        name, _, argument = line.strip().partition(" ")
        handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            "/help": self._help,
            "/model": self._model,
            "/tools": self._tools,
            "/usage": self._usage,
            "/new": self._new,
            "/session": self._session,
        }
        if name in ("/exit", "/quit"):
            return False
        handler = handlers.get(name)
        if handler is None:
            self.term.show(f"unknown command {name}; /help lists them", "yellow")
        else:
            await handler(argument.strip())
        return True

    async def _help(self, _: str) -> None:
        for usage, text in COMMANDS.items():
            self.term.show(f"  {usage:<26} {text}")
        if self.lines.interactive:
            self.term.show(
                "  While the model works, type to steer it: Enter sends the line at the next step "
                "(Ctrl-C still cancels the turn)."
            )

    async def _model(self, spec: str) -> None:
        if not spec:
            self.term.show(f"model: {self.model}")
            return
        try:
            agent = self.agent.with_model(spec)
            agent.model  # noqa: B018  # create it now: a bad string or a missing key is said here
        except ToolloopError as exc:
            self.term.error(describe(exc))
            return
        self.agent, self.model = agent, spec
        self.setup = replace(self.setup, model=spec)
        self.term.show(f"model: {spec}")

    async def _tools(self, _: str) -> None:
        if not self.agent.tools:
            self.term.show("no tools (add some with --tool package.module:function)")
        for tool in self.agent.tools:
            first = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
            approval = " (needs approval)" if tool.requires_approval else ""
            self.term.show(f"  {tool.name}{approval}: {first}")

    async def _usage(self, _: str) -> None:
        self.term.show(f"last turn: {usage_text(self.last_usage)}")
        try:
            info = await self.store.get_session(self.session_id)
        except ToolloopError:
            self.term.show("session: nothing recorded yet")
            return
        self.term.show(f"session {self.session_id}: {usage_text(info.usage)} · {info.message_count} messages")

    async def _new(self, _: str) -> None:
        self.session_id = new_session_id()
        self.agent = self.agent.with_session(self.session_id)
        self.last_usage = Usage()
        self.term.show(f"new session {self.session_id}")

    async def _session(self, _: str) -> None:
        self.term.show(f"session {self.session_id}: continue it with 'tooloop chat --session {self.session_id}'")


async def _next_line(chat: Chat) -> str | None:
    """A line typed during the last turn (shown as if typed at the prompt), else one read now."""
    if chat.pending:
        line = chat.pending.pop(0)
        chat.term.show(f"{PROMPT}{line}", "bold")
        return line
    draft, chat.draft = chat.draft, ""
    return await chat.lines.read(PROMPT, draft)


async def _loop(chat: Chat, approve: Approve) -> None:
    interrupted = False
    while not terminating():  # SIGTERM: the turn was cancelled as by Ctrl-C, and the chat ends
        try:
            line = await _next_line(chat)
        except KeyboardInterrupt:
            if interrupted:
                return
            interrupted = True
            chat.term.show("(Ctrl-C again, Ctrl-D or /exit to quit)", "dim")
            continue
        interrupted = False
        if line is None:
            return
        if not line.strip():
            continue
        if line.startswith("/"):
            if not await chat.command(line):
                return
            continue
        await chat.turn(line, approve)


async def _show_continued(store: BaseStore, session_id: str, term: Terminal) -> None:
    try:
        info = await store.get_session(session_id)
    except ToolloopError:
        return  # a new session
    term.show(f"continuing: {info.title or '(untitled)'} · {info.message_count} messages so far", "dim")


def _checked(attachments: Attachments, agent: Agent) -> Attachments:
    """The attachments, refused at once (exit 2) when the model cannot take one of them."""
    if attachments.files:
        try:
            check_prompt_inputs(agent.model, [UserMessage(parts=attachments.files)])
        except UnsupportedContentError as exc:
            fail(str(exc))
    return attachments


async def chat_command(options: ChatOptions, term: Terminal) -> ExitCode:
    """Run the chat until the user quits."""
    async with open_cli_store(options.store) as store:
        session_id, _ = await open_session(store, options.session, options.continue_last, term)
        start = await start_session(store, options.agent, session_id, term)
        lines = _Lines(term)
        chat = Chat(start.agent, start.setup, session_id, store, term, lines)
        chat.attachments = _checked(options.attachments, start.agent)
        why = "" if start.choice.reason == "--model" else f" ({start.choice.reason})"
        model = start.choice.spec
        name = start.agent.name
        who = f"agent {name} · " if name and start.choice.reason != f"agent {name}" else ""
        term.show(f"tooloop chat · {who}model {model}{why} · session {session_id} · /help for commands", "dim")
        await _show_continued(store, session_id, term)
        async with start.agent:  # its MCP servers run for the whole chat (shared by /model copies)
            await _loop(chat, options.approve)
    return ExitCode.OK
