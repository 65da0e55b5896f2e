"""Showing a run as it happens: a spinner while the model works, the answer, every tool call.

On a terminal the answer is live markdown on stdout and tool activity is coloured on stderr.
Piped, the answer streams to stdout as it comes, flushed with every piece. When the model has
tools, a response's text is held until the response is complete: an answer goes to stdout, text
that came with tool calls goes to stderr, so stdout holds nothing but the answer.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, assert_never

from rich.console import Group, RenderableType
from rich.live import Live
from rich.status import Status
from rich.text import Text

from .._render import arguments_text, clip
from .._render import outcome_text as render_outcome
from ..events import (
    ApprovalDecided,
    ApprovalRequested,
    CacheBreak,
    CacheMiss,
    Event,
    MessageAdded,
    ModelEvent,
    ModelRequestFinished,
    ModelRequestStarted,
    RunFinished,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
)
from ..loop.result import ApprovalRequest
from ..messages import Message, ModelResponse, ToolCallMessage, ToolCallStatus, UserMessage
from .terminal import Terminal

if TYPE_CHECKING:
    from .typeahead import Typeahead

__all__ = ["TurnView", "on_screen"]

ARGUMENT_CHARS = 200
RESULT_CHARS = 300
QUESTION_SYNC_SECONDS = 5.0


def hard_breaks(text: str) -> str:
    """Markdown in which a single newline stays a line break (outside code blocks), as the model
    wrote it: plain text with one item per line is not joined into a paragraph."""
    out: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        out.append(line if fenced or not line.strip() or line.endswith("  ") else line + "  ")
    return "\n".join(out)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def call_text(name: str, arguments: dict[str, object] | object, limit: int = ARGUMENT_CHARS) -> str:
    """``name({"arg": 1})`` with long arguments collapsed."""
    shown = arguments_text(arguments) if isinstance(arguments, dict) else str(arguments)
    return f"{name}({clip(shown, limit)})"


def outcome_text(call: ToolCallMessage, limit: int = RESULT_CHARS) -> str:
    """``ok: result`` or ``error: ValueError: text``, on one line, long ones collapsed."""
    text = _one_line(render_outcome(call, 0))
    return clip(text, limit) if call.status is not ToolCallStatus.OK else f"ok: {clip(text, limit)}"


_ON_SCREEN: list[TurnView] = []  # the view of the run in progress (one at a time in a command)


def on_screen() -> TurnView | None:
    """The view of the run in progress, if any."""
    return _ON_SCREEN[0] if _ON_SCREEN else None


class TurnView:
    """Renders the events of one run on a :class:`Terminal`.

    ``show_answer=False`` (``--json``) keeps the answer off stdout; tool activity still goes to
    stderr. Call :meth:`close` when the run ends, however it ends.
    """

    def __init__(self, term: Terminal, *, show_answer: bool = True, has_tools: bool = True):
        self.term = term
        self.show_answer = show_answer
        self._live_answer = term.out_live and show_answer
        # Piped with no tools, every response is the answer: it streams as it comes.
        self._stream_plain = show_answer and not term.out_live and not has_tools
        self._streamed = False
        self._spinning = term.err_live and not term.quiet
        self._status: Status | None = None
        self._live: Live | None = None
        self._text = ""
        self._shown: set[str] = set()
        self._asking = False
        self._held: list[ToolCallMessage] = []
        self._requests: dict[str, asyncio.Event] = {}
        self._label = "thinking…"
        self.keyboard: Typeahead | None = None
        """Keys typed during the turn (``tooloop chat``): paused while a question is asked."""
        self._paused_keyboard = False
        self._draft = ""
        self._queued: list[str] = []  # steering messages not yet delivered
        self._later: list[str] = []  # lines for after the turn (commands)
        self._prompts = 0  # user messages of the run so far: the first is the prompt
        self._closed = False
        _ON_SCREEN[:] = [self]

    # ------------------------------------------------------------------ events

    def handle(self, event: Event) -> None:
        """Show one event."""
        match event:
            case TextDelta() | ThinkingDelta() | ToolCallDelta():
                self._model_event(event)
            case ModelRequestStarted():
                self._spin("thinking…")
            case ModelRequestFinished(response=response):
                self._response_done(response)
            case ToolCallStarted(tool_name=name, arguments=arguments):
                self._spin(f"running {call_text(name, dict(arguments), 60)}")
            case ToolCallProgress(tool_name=name, progress=progress, total=total, message=message):
                done = f"{progress:g}/{total:g}" if total else f"{progress:g}"
                self._spin(f"running {name}: {done}" + (f" {message}" if message else ""))
            case ToolCallFinished(message=call):
                self._call_done(call)
            case ApprovalRequested() | SubagentEvent():
                self._question(event)
            case ApprovalDecided() | CacheMiss() | CacheBreak():
                pass  # the call's outcome line says what became of it; a cache miss is logged
            case MessageAdded(message=message):
                self._message_added(message)
            case RunFinished():
                self.close()
            case _:
                assert_never(event)

    def _message_added(self, message: Message) -> None:
        # A call that never ran (denied, unknown tool) may be recorded without a
        # ToolCallFinished event by older loops; shown once either way.
        if isinstance(message, ToolCallMessage) and message.status.finished:
            self._call_done(message)
        elif isinstance(message, UserMessage):
            self._user_message(message)

    def _question(self, event: ApprovalRequested | SubagentEvent) -> None:
        """An approval question (the approver asks about a subagent's call by its path), or a
        subagent's call running; a subagent's answer shows as its call's result."""
        path, inner = ("", event) if isinstance(event, ApprovalRequested) else (f"{event.path}/", event.event)
        match inner:
            case ApprovalRequested(request=request):
                self.pause()
                self._reached(f"{path}{request.tool_call_id}").set()
            case ToolCallStarted(tool_name=name):
                self._spin(f"{path}running {name}")

    def _model_event(self, event: ModelEvent) -> None:
        match event:
            case TextDelta(text=text):
                self._text_arrived(text)
            case ThinkingDelta():
                if self._live is None:
                    self._spin("thinking…")
            case ToolCallDelta(name=name):
                if name:
                    self._spin(f"preparing {name}…")
            case _:
                assert_never(event)

    # ------------------------------------------------------------------ spinner and live text

    def _spin(self, label: str) -> None:
        self._label = label
        if not self._spinning or self._asking:
            return
        self._stop_live()
        if self._status is None:
            self._status = self.term.err.status(self._status_view(), spinner="dots")
            self._status.start()
        else:
            self._status.update(self._status_view())

    def _stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.update(self._markdown())  # what was typed does not stay under the answer
            self._live.stop()
            self._live = None

    # ------------------------------------------------------------------ what the user types meanwhile

    def _typed(self) -> Text | None:
        """The lines under the spinner or the live answer: messages waiting, the line being typed."""
        lines = [Text(f"queued: {text}", style="cyan") for text in self._queued]
        lines += [Text(f"after this turn: {text}", style="cyan") for text in self._later]
        if self._draft:
            lines.append(Text(f"steer> {self._draft}", style="bold"))
        return Text("\n").join(lines) if lines else None

    def _status_view(self) -> Text:
        label = Text(self._label, style="dim")
        typed = self._typed()
        return label if typed is None else Text("\n").join([label, typed])

    def _markdown(self) -> RenderableType:
        from rich.markdown import Markdown  # markdown-it and pygments: only on a terminal

        return Markdown(hard_breaks(self._text))

    def _answer_view(self) -> RenderableType:
        typed = self._typed()
        return self._markdown() if typed is None else Group(self._markdown(), typed)

    def _typing_changed(self) -> None:
        if self._closed or self._asking:
            return
        if self._live is not None:
            self._live.update(self._answer_view())
        elif self._status is not None:
            self._status.update(self._status_view())
        elif self._typed() is not None:
            self._spin(self._label)

    def typed(self, draft: str) -> None:
        """Show the line the user is typing while the turn runs."""
        if draft != self._draft:
            self._draft = draft
            self._typing_changed()

    def queued(self, text: str) -> None:
        """Show a steering message waiting for the model (until its delivery is shown)."""
        self._queued.append(text)
        self._typing_changed()

    def after_turn(self, text: str) -> None:
        """Show a line kept for when the turn ends (a /command)."""
        self._later.append(text)
        self._typing_changed()

    def _user_message(self, message: UserMessage) -> None:
        self._prompts += 1
        if self._prompts == 1:
            return  # the prompt of the turn
        if message.text in self._queued:
            self._queued.remove(message.text)
        line = Text("delivered: ", style="bold cyan")
        line.append(message.text)
        self.term.show(line)
        self._typing_changed()

    def pause(self) -> None:
        """Stop the spinner and the live answer (before asking a question)."""
        self._stop_spinner()
        self._stop_live()

    def hold(self) -> None:
        """Keep the screen still for a question not about a call (an MCP server asking the
        user): nothing live until :meth:`end_question`."""
        self.pause()
        self._asking = True
        self._pause_keyboard()

    def _pause_keyboard(self) -> None:
        """The question's prompt reads the keys: what is typed answers it, it is not steering."""
        if self.keyboard is not None and self.keyboard.reading:
            self.keyboard.pause()
            self._paused_keyboard = True

    def _text_arrived(self, text: str) -> None:
        if self._stream_plain:
            if text:
                self.term.answer(text)
                self._streamed = True
            return
        self._text += text
        if not self._live_answer:
            return
        self._stop_spinner()
        if self._live is None:
            self._live = Live(
                self._answer_view(),
                console=self.term.out,
                refresh_per_second=8,
                vertical_overflow="visible",
            )
            self._live.start()
        else:
            self._live.update(self._answer_view())

    def _response_done(self, response: ModelResponse) -> None:
        streamed = self._live is not None or self._streamed
        self.pause()
        text = response.refusal or response.text
        self._text = ""
        if self._stream_plain:
            self._end_streamed(text if not streamed else "")
            return
        if self._live_answer:
            if text.strip() and not streamed:  # a plain (not streamed) response: show it whole
                from rich.markdown import Markdown

                self.term.out.print(Markdown(hard_breaks(text)))
            return
        self._hand_over(text, answer=not response.tool_calls)

    def _hand_over(self, text: str, *, answer: bool) -> None:
        """Give text held back (piped output) to its stream: the answer to stdout, the rest to stderr."""
        if not text.strip():
            return
        if answer and self.show_answer:
            self.term.answer(text if text.endswith("\n") else text + "\n")
        elif not answer:
            self.term.note(_one_line(text))

    # ------------------------------------------------------------------ tool calls

    def _call_done(self, call: ToolCallMessage) -> None:
        if self._asking:  # other calls of the batch finish while a question is on screen
            self._held.append(call)
            return
        if call.tool_call_id in self._shown:
            return
        self._shown.add(call.tool_call_id)
        self._stop_spinner()
        self._label = "working…"  # shown again if the user types before the next step
        if self.term.quiet:
            return
        if not self.term.err_live:
            self.term.note(f"tool {call_text(call.tool_name, dict(call.arguments))} -> {outcome_text(call)}", "")
            return
        line = Text("⚙ ", style="yellow")
        line.append(call.tool_name, style="bold yellow")
        line.append(f"({clip(arguments_text(call.arguments), ARGUMENT_CHARS)})", style="yellow")
        mark, style = ("✓", "green") if call.ok else ("✗", "red")
        outcome = Text(f"  {mark} ", style=style)
        outcome.append(outcome_text(call), style="dim" if call.ok else style)
        self.term.note(Text("\n").join([line, outcome]), "")

    def _reached(self, tool_call_id: str) -> asyncio.Event:
        return self._requests.setdefault(tool_call_id, asyncio.Event())

    async def begin_question(self, request: ApprovalRequest) -> None:
        """Show a call that waits for approval, its arguments in full, once everything that came
        before its request is on screen; other output waits until :meth:`end_question`."""
        try:
            await asyncio.wait_for(self._reached(request.tool_call_id).wait(), QUESTION_SYNC_SECONDS)
        except TimeoutError:
            pass  # the request event did not come through the stream: ask anyway
        self.pause()
        self._asking = True
        self._pause_keyboard()
        line = Text("? ", style="bold magenta")
        line.append(f"{request.tool_name}", style="bold")
        line.append(f"({arguments_text(request.arguments)})")
        line.append(" needs approval", style="magenta")
        self.term.show(line)

    def end_question(self) -> None:
        """Show what finished while the question was on screen; keys typed from now on are
        read as steering again."""
        self._asking = False
        if self._paused_keyboard and self.keyboard is not None:
            self._paused_keyboard = False
            self.keyboard.resume()
        held, self._held = self._held, []
        for call in held:
            self._call_done(call)

    def _end_streamed(self, text: str) -> None:
        """End streamed text with a newline (a response that did not stream comes whole)."""
        if text.strip():
            self.term.answer(text)
            self._streamed = True
        if self._streamed:
            self.term.answer("\n")
        self._streamed = False

    def close(self) -> None:
        """Stop everything live; text of a response cut short (cancelled, failed) is ended where
        it is: what the model said so far stays the answer, on stdout."""
        if _ON_SCREEN == [self]:
            _ON_SCREEN.clear()
        self.end_question()
        self._closed = True
        self.pause()
        text, self._text = self._text, ""
        if self._stream_plain:
            self._end_streamed("")
        elif not self._live_answer:
            self._hand_over(text, answer=True)
