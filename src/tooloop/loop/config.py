"""``RunConfig``: everything about a run that comes from the agent, and the session it continues."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..messages import Message, Usage
from ..models.base import Model, ModelSettings, ToolDefinition
from ..tools.source import ToolSource
from ..tools.tool import Tool
from ..transcript import Transcript
from .approval import Approver
from .control import Hooks
from .limits import Limits
from .observe import Tracer
from .record import Journal
from .shaping import ContextShaper, Shaper

if TYPE_CHECKING:  # what only a run that uses them imports
    from ..tools.search import ToolSearch
    from .output import OutputSpec
    from .summarize import ResultSummarizer

__all__ = ["RunConfig", "SessionSource"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """Everything about a run that comes from the agent, resolved."""

    model: Model
    system: str | None = None
    tools: Mapping[str, Tool] = field(default_factory=dict)
    sources: tuple[ToolSource, ...] = ()
    """Where more tools come from (MCP servers); listed before every model request."""
    allowed: frozenset[str] | None = None
    """Only tools with these names are offered (None: all but the denied)."""
    denied: frozenset[str] = frozenset()
    unresolved: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Names of ``allowed_tools`` / ``denied_tools`` (by parameter) that are none of the agent's own
    tools: each must be a tool of a source, checked when the sources first list theirs."""
    limits: Limits = field(default_factory=Limits)
    settings: ModelSettings = field(default_factory=ModelSettings)
    output: OutputSpec | None = None
    hooks: Hooks = field(default_factory=Hooks)
    approver: Approver | None = None
    context: ContextShaper | None = None
    rerun_interrupted: bool = True
    """On resume, run again calls that started but have no result (False: mark them failed)."""
    tracer: Tracer | None = None
    """Traces this agent's runs (None: the default set by ``tooloop.telemetry.instrument()``)."""
    name: str | None = None
    """The agent's name, for traces."""
    summarize_results: ResultSummarizer | Model | None = None
    """Summarises a tool result longer than ``Limits.max_tool_result_chars`` instead of cutting it."""
    auto_execute_tools: bool = True
    """False: the run pauses with every call pending, as for approvals."""
    tool_search: ToolSearch | None = None
    """Past its threshold, the model gets a search tool and the tools it loaded (not all of them)."""
    definitions: tuple[ToolDefinition, ...] = field(init=False, repr=False, compare=False)
    """The definitions of ``tools``, in their order: made once, sent by every request of every run."""
    shaper: Shaper = field(init=False, repr=False, compare=False)
    """What builds each request's messages (the system prompt, with the output schema's
    instructions when the model needs them): made once, used by every run."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "definitions", tuple(t.definition for t in self.tools.values()))
        system = self.system
        if self.output is not None:  # the output module only for agents with structured output
            from .output import with_output_instructions

            system = with_output_instructions(system, self.output, self.model)
        object.__setattr__(self, "shaper", Shaper(system, self.context, self.model))


class SessionSource(Protocol):
    """A stored session a run continues: opened when the run starts, closed when it ends."""

    async def open(self) -> tuple[Sequence[Message], Journal]:
        """The session's history and the journal that continues it."""
        ...

    async def close(self, usage: Usage, model: str | None, transcript: Transcript) -> None:
        """Record the run's totals on the session and release what :meth:`open` acquired."""
        ...
