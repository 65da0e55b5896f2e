"""Tool search: an agent with hundreds of tools sends the model a search tool, not every definition.

Every tool definition is input the model reads (and pays for) on every request. Past
:attr:`ToolSearch.threshold` tools, a request carries a ``search_tools`` tool and the tools loaded
so far; the model searches by what it needs (BM25 over names, descriptions and parameters, here,
with no network), and what the search finds is loaded for the next request. Loaded tools stay
loaded for the rest of the conversation, in the order they were found, so the request's prefix
(and the provider's prompt cache) stays intact. A call to a tool that exists but is not loaded yet
loads it and tells the model to call it again: a recoverable error, never the end of the run.

With :attr:`ToolSearch.mode` ``"native"`` (the default) and a model whose provider searches
deferred tools itself (Anthropic's tool search tool, the Responses API's ``tool_search``), every
tool is sent marked ``defer_loading`` and the provider's search loads them: what it loads is
added to the conversation, never to the tool list, so the cached prefix stays whole. The tools it
loaded (recorded by the adapter on the response) are the loaded ones here too.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .._checks import require, require_count
from ..errors import ArgumentValueError
from ..messages import AssistantMessage, Message, ToolCallMessage
from ..models.base import ToolDefinition, loaded_by_search
from .tool import Tool

__all__ = ["SEARCH_TOOL", "ToolIndex", "ToolLoader", "ToolSearch"]

SEARCH_TOOL = "search_tools"
"""The name of the search tool the model is offered."""

SearchMode = Literal["native", "local", "off"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSearch:
    """When and how an agent's tools are searched instead of all sent (``Agent(tool_search=...)``)."""

    threshold: int = 30
    """More tools than this: the model gets ``search_tools`` and the loaded tools only."""
    max_results: int = 5
    """Tools one search loads at most."""
    always: frozenset[str] = field(default_factory=frozenset)
    """Tools loaded from the first request on (the ones nearly every conversation needs)."""
    mode: SearchMode = "native"
    """``"native"`` (default): the provider's own tool search where the model has one (Anthropic
    Claude 4.5 and later, OpenAI Responses gpt-5.4 and later), the local search elsewhere.
    ``"local"``: always the local ``search_tools`` (BM25 here). ``"off"``: every tool is sent."""

    def __post_init__(self) -> None:
        if self.mode not in ("native", "local", "off"):
            raise ArgumentValueError(f"ToolSearch(mode={self.mode!r}): pass 'native', 'local' or 'off'")
        require_count(self.threshold, "ToolSearch(threshold=...)", 0)
        require_count(self.max_results, "ToolSearch(max_results=...)", 1)
        if isinstance(self.always, str):
            object.__setattr__(self, "always", frozenset({self.always}))
        require(self.always, (frozenset, set, list, tuple), "ToolSearch(always=...)", "pass tool names")
        object.__setattr__(self, "always", frozenset(self.always))


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words(text: str) -> list[str]:
    """Lower-case words of ``text``; ``getWeather``, ``get_weather`` and ``get-weather`` agree."""
    return [w.lower() for w in _WORD.findall(text)]


class ToolIndex:
    """BM25 over tool definitions: name (counted twice), description, parameter names and descriptions."""

    __slots__ = ("_docs", "_idf", "_length", "_names")

    K1 = 1.2
    B = 0.75

    def __init__(self, tools: Iterable[ToolDefinition]):
        self._names: list[str] = []
        self._docs: list[Counter[str]] = []
        for definition in tools:
            self._names.append(definition.name)
            self._docs.append(Counter(_document(definition)))
        total = sum(sum(doc.values()) for doc in self._docs)
        self._length = total / len(self._docs) if self._docs else 0.0
        frequency: Counter[str] = Counter()
        for doc in self._docs:
            frequency.update(doc.keys())
        n = len(self._docs)
        self._idf = {word: math.log(1 + (n - df + 0.5) / (df + 0.5)) for word, df in frequency.items()}

    def search(self, query: str, limit: int) -> list[str]:
        """The names of the best matches for ``query``, best first (ties: definition order)."""
        terms = [w for w in words(query) if w in self._idf]
        scored = []
        for position, (name, doc) in enumerate(zip(self._names, self._docs, strict=True)):
            score = sum(self._term(doc, term) for term in terms)
            if score > 0:
                scored.append((-score, position, name))
        return [name for _, _, name in sorted(scored)[:limit]]

    def _term(self, doc: Counter[str], term: str) -> float:
        count = doc.get(term, 0)
        if not count:
            return 0.0
        size = sum(doc.values())
        norm = count + self.K1 * (1 - self.B + self.B * size / (self._length or 1.0))
        return self._idf[term] * count * (self.K1 + 1) / norm


def _document(definition: ToolDefinition) -> list[str]:
    found = words(definition.name) * 2 + words(definition.description)
    properties = definition.parameters.get("properties")
    if isinstance(properties, Mapping):
        for key, schema in properties.items():
            found += words(str(key))
            if isinstance(schema, Mapping) and isinstance(schema.get("description"), str):
                found += words(schema["description"])
    return found


class ToolLoader:
    """One conversation's loaded tools, and the ``search_tools`` tool that loads more."""

    __slots__ = ("_deferred", "_index", "_indexed", "_tools", "config", "eager", "loaded", "tool")

    def __init__(self, config: ToolSearch, tools: Mapping[str, Tool], history: Sequence[Message] = ()):
        """``tools`` is the agent's live mapping of every tool (sources add to it as they list)."""
        self.config = config
        self._tools = tools
        self.loaded: dict[str, None] = dict.fromkeys(sorted(config.always))
        self.eager: dict[str, None] = dict(self.loaded)
        """With the provider's search: the tools sent loaded (not deferred): ``always``, and the
        ones called before any search loaded them."""
        self._deferred: dict[str, tuple[ToolDefinition, ToolDefinition]] = {}
        self._index: ToolIndex | None = None
        self._indexed: tuple[ToolDefinition, ...] = ()
        for message in history:  # what an earlier run loaded stays loaded: the same prefix
            if isinstance(message, ToolCallMessage):
                natively = loaded_by_search(message.provider_data)
                self.loaded.update(dict.fromkeys(natively))
                if message.tool_name not in self.loaded and message.tool_name != SEARCH_TOOL:
                    self.eager[message.tool_name] = None
                self.loaded.update(dict.fromkeys(_found_by(message) or [message.tool_name]))
            elif isinstance(message, AssistantMessage):
                self.loaded.update(dict.fromkeys(loaded_by_search(message.provider_data)))
        self.loaded.pop(SEARCH_TOOL, None)
        self.tool = Tool(
            name=SEARCH_TOOL,
            description=(
                "Find tools for a task and load them: describe what you need in a few words. "
                "The tools found can be called from your next step on."
            ),
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What the tool should do"}},
                "required": ["query"],
            },
            function=self._search,
        )

    @property
    def active(self) -> bool:
        """True when the agent has more tools than the threshold."""
        return len(self._tools) > self.config.threshold

    def offered(self) -> dict[str, Tool]:
        """The tools a request carries: ``search_tools``, then the loaded ones in load order."""
        tools = self._tools
        offered = {SEARCH_TOOL: self.tool}
        offered.update((name, tools[name]) for name in self.loaded if name in tools)
        return offered

    def deferred(self) -> tuple[ToolDefinition, ...]:
        """The tools a request carries with the provider's search: every tool in the agent's
        order, deferred except :attr:`eager` ones (the list only changes when a tool is called
        before it was loaded, or a source adds tools)."""
        definitions = []
        for name, tool in self._tools.items():
            if name == SEARCH_TOOL:
                continue
            definition = tool.definition
            if name not in self.eager:
                cached = self._deferred.get(name)
                if cached is None or cached[0] is not definition:
                    cached = self._deferred[name] = (definition, replace(definition, defer_loading=True))
                definition = cached[1]
            definitions.append(definition)
        return tuple(definitions)

    def note(self, provider_data: Mapping[str, Any]) -> None:
        """Load what the provider's search loaded in a response (recorded by its adapter)."""
        self.loaded.update(dict.fromkeys(loaded_by_search(provider_data)))

    def search(self, query: str) -> dict[str, Any]:
        """Search every tool, load what it finds; the result the model is told."""
        tools = self._tools
        definitions = tuple(t.definition for name, t in tools.items() if name != SEARCH_TOOL)
        if self._index is None or definitions != self._indexed:
            self._index, self._indexed = ToolIndex(definitions), definitions
        found = self._index.search(query, self.config.max_results)
        self.loaded.update(dict.fromkeys(found))
        if not found:
            return {"loaded": [], "note": "no tool matches; try other words"}
        return {"loaded": found, "tools": [{"name": n, "description": tools[n].description} for n in found]}

    def load(self, name: str) -> None:
        """Load one tool (the model called it before it was loaded); with the provider's search
        it is sent loaded from now on."""
        self.loaded[name] = None
        self.eager[name] = None

    async def _search(self, query: str) -> dict[str, Any]:
        return self.search(query)


def _found_by(message: ToolCallMessage) -> list[str] | None:
    """The names a ``search_tools`` call of the history loaded."""
    if message.tool_name != SEARCH_TOOL or not isinstance(message.result, Mapping):
        return None
    loaded = message.result.get("loaded")
    return [n for n in loaded if isinstance(n, str)] if isinstance(loaded, list | tuple) else []
