"""What a server offers besides tools (prompts and resources), and which of it an agent takes.

``include`` / ``exclude`` name tools (a list), or any component (a mapping with the keys
``tools``, ``prompts`` and ``resources``). A name that matches nothing the server lists is an
error naming it: a typo must not quietly offer what it meant to hide.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar, get_args

from mcp import types

from ..errors import ConfigurationError
from ..messages import ContentPart, EmbeddedResource, ResourceLink
from ..outcome import render_parts
from ._results import to_part

__all__ = [
    "COMPONENTS",
    "Component",
    "Filters",
    "MCPPrompt",
    "MCPPromptArgument",
    "PromptMessage",
    "paginate",
    "to_link",
    "to_prompt",
    "to_prompt_message",
    "to_resource",
]

Component: TypeAlias = Literal["tools", "prompts", "resources"]
COMPONENTS: tuple[Component, ...] = get_args(Component)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Filters:
    """Per component: the names to offer only (None: all) and the names never to offer."""

    include: Mapping[Component, frozenset[str] | None]
    exclude: Mapping[Component, frozenset[str]]

    @classmethod
    def of(cls, server: str, include: Any, exclude: Any) -> Filters:
        """From ``include=`` / ``exclude=`` as given: a list of tool names, or a mapping by component."""
        included = _by_component(server, "include", include)
        excluded = _by_component(server, "exclude", exclude if exclude is not None else ())
        return cls(
            include=dict(included),
            exclude={c: names if names is not None else frozenset() for c, names in excluded.items()},
        )

    def check(self, server: str, component: Component, known: set[str]) -> None:
        """Raise :class:`ConfigurationError` for a name in this component's filters that is unknown."""
        for option, names in (("include", self.include[component]), ("exclude", self.exclude[component])):
            unknown = sorted(names - known) if names else []
            if unknown:
                noun = component[:-1]
                raise ConfigurationError(
                    f"{option}= of MCP server {server!r} names {', '.join(map(repr, unknown))}, which is not one "
                    f"of its {component} (its {component}: {', '.join(sorted(known)) or 'none'}); check the "
                    f"spelling of the {noun}"
                )

    def wants(self, component: Component, *names: str) -> bool:
        """Whether an item known by ``names`` (a resource: its URI and its name) is offered."""
        if any(name in self.exclude[component] for name in names):
            return False
        included = self.include[component]
        return included is None or any(name in included for name in names)


def _by_component(server: str, option: str, value: Any) -> dict[Component, frozenset[str] | None]:
    if value is None:
        return dict.fromkeys(COMPONENTS)
    if isinstance(value, str):
        raise ConfigurationError(
            f"{option}= of MCP server {server!r} must be a list of names, got the string {value!r}"
        )
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(COMPONENTS))
        if unknown:
            raise ConfigurationError(
                f"{option}= of MCP server {server!r} has the key(s) {', '.join(map(repr, unknown))}; "
                f"the components are {', '.join(COMPONENTS)}"
            )
        return {c: _names(server, option, value[c]) if c in value else None for c in COMPONENTS}
    tools = _names(server, option, value)  # a list (or a string: the error says so)
    return {"tools": tools, "prompts": None, "resources": None}


def _names(server: str, option: str, value: Iterable[str]) -> frozenset[str]:
    if isinstance(value, str):
        raise ConfigurationError(f"{option}= of MCP server {server!r} must list names, got the string {value!r}")
    return frozenset(value)


# ------------------------------------------------------------------ prompts


@dataclass(frozen=True, slots=True)
class MCPPromptArgument:
    """An argument of a prompt template."""

    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class MCPPrompt:
    """A prompt template a server offers (``prompts/list``); fill it with :meth:`MCPServer.get_prompt`."""

    name: str
    description: str | None = None
    arguments: tuple[MCPPromptArgument, ...] = ()
    title: str | None = None


@dataclass(frozen=True, slots=True)
class PromptMessage:
    """One message of a filled prompt: its role and content parts."""

    role: Literal["user", "assistant"]
    parts: tuple[ContentPart, ...]

    @property
    def text(self) -> str:
        """The parts as text (resources inlined, images as placeholders): what to send as a prompt."""
        return render_parts(self.parts)


def to_prompt(prompt: types.Prompt) -> MCPPrompt:
    arguments = tuple(MCPPromptArgument(a.name, a.description, bool(a.required)) for a in prompt.arguments or ())
    return MCPPrompt(prompt.name, prompt.description, arguments, prompt.title)


def to_prompt_message(message: types.PromptMessage) -> PromptMessage:
    return PromptMessage("user" if message.role == "user" else "assistant", (to_part(message.content),))


# ------------------------------------------------------------------ resources


def to_link(resource: types.Resource) -> ResourceLink:
    """A listed resource as a :class:`ResourceLink` (read it with :meth:`MCPServer.read_resource`)."""
    return ResourceLink(
        uri=str(resource.uri),
        name=resource.name,
        title=resource.title,
        description=resource.description,
        mime_type=resource.mime_type,
        size=resource.size,
    )


def to_resource(contents: types.TextResourceContents | types.BlobResourceContents) -> EmbeddedResource:
    """Read contents as an :class:`EmbeddedResource` content part."""
    if isinstance(contents, types.TextResourceContents):
        return EmbeddedResource(uri=str(contents.uri), mime_type=contents.mime_type, text=contents.text)
    return EmbeddedResource(uri=str(contents.uri), mime_type=contents.mime_type, blob=contents.blob)


async def paginate(
    page: Callable[[types.PaginatedRequestParams | None], Awaitable[tuple[list[_T], str | None]]],
) -> list[_T]:
    """Every item of a paginated list (``tools/list``, ``prompts/list``, ``resources/list``)."""
    items: list[_T] = []
    cursor: str | None = None
    while True:
        found, cursor = await page(types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        items.extend(found)
        if not cursor:
            return items
