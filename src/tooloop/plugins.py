"""Plugins: providers and tools other packages add through entry points.

A package adds a provider with an entry point in the group ``tooloop.providers``, named after the
provider and naming its factory (``"tooloop_foo:create"``, called as the registry calls any
factory), and tools with one in ``tooloop.tools``, naming a function, a ``Tool`` or a list of
them. ``pip install tooloop-foo`` is then all it takes: ``"foo:model"`` model strings work, and
``tooloop run --tool NAME`` gives the tools.

Discovery is lazy: nothing here runs at ``import tooloop``. The registry looks for provider
plugins the first time a model string names a provider it does not know (or a listing asks), and
a provider's module is imported only when one of its models is created. A plugin that cannot be
read or loaded is one :class:`PluginWarning`, never a failure of the program that found it.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "PROVIDERS_GROUP",
    "TOOLS_GROUP",
    "Plugin",
    "PluginWarning",
    "plugin_tools",
    "plugins",
    "register_provider_plugins",
]

PROVIDERS_GROUP = "tooloop.providers"
TOOLS_GROUP = "tooloop.tools"
Kind = Literal["provider", "tools"]


class PluginWarning(UserWarning):
    """A plugin that could not be read or loaded; the program goes on without it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Plugin:
    """One entry point of an installed package in a tooloop group."""

    kind: Kind
    name: str
    """The provider's name (``"foo"`` for ``"foo:model"``) or the tool set's name."""
    target: str
    """The import path the entry point names, ``"package.module:attribute"``."""
    package: str | None
    """The installed distribution that declares it, and its version (``"tooloop-foo 1.0"``)."""


_lock = threading.Lock()
_registered = False
_shadowed: set[str] = set()


def plugins() -> tuple[Plugin, ...]:
    """Every provider and tools plugin installed, sorted by kind and name; imports none of them."""
    found = [
        *_entry_points(PROVIDERS_GROUP, "provider"),
        *_entry_points(TOOLS_GROUP, "tools"),
    ]
    return tuple(sorted(found, key=lambda p: (p.kind, p.name)))


def _entry_points(group: str, kind: Kind) -> list[Plugin]:
    from importlib import metadata  # not at import: scanning installed packages is for when it is needed

    found: list[Plugin] = []
    try:
        points = metadata.entry_points(group=group)
    except Exception as exc:  # a broken installed distribution: warn, never fail the caller
        _warn(f"the installed packages' {group} entry points could not be read ({type(exc).__name__}: {exc})")
        return found
    for point in points:
        dist = getattr(point, "dist", None)
        package = f"{dist.name} {dist.version}" if dist is not None else None
        if ":" not in point.value or not point.name:
            _warn(
                f"plugin {point.name!r} of {package or 'an installed package'} ({group}): {point.value!r} is not "
                "'package.module:attribute'; ignored"
            )
            continue
        found.append(Plugin(kind=kind, name=point.name, target=point.value.replace(" ", ""), package=package))
    return found


def register_provider_plugins() -> None:
    """Register every ``tooloop.providers`` plugin with the model registry (once per process);
    a name a built-in provider or an earlier registration holds is kept, with a warning."""
    global _registered
    with _lock:
        if _registered:
            return
        _registered = True
        from .models.registry import is_registered_provider, register_provider

        for plugin in plugins():
            if plugin.kind != "provider":
                continue
            if is_registered_provider(plugin.name):
                _shadowed.add(plugin.name)
                _warn(f"plugin provider {plugin.name!r} of {plugin.package} is ignored: a provider of that name exists")
                continue
            register_provider(plugin.name, plugin.target)


def shadowed(plugin: Plugin) -> bool:
    """Whether this provider plugin was ignored because a provider of its name already existed."""
    register_provider_plugins()
    return plugin.kind == "provider" and plugin.name in _shadowed


def load(plugin: Plugin) -> Any:
    """The object the plugin names (imports its module); raises what the import raises."""
    module_name, _, attribute = plugin.target.partition(":")
    value: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def plugin_tools(name: str) -> list[Any]:
    """The tools of the ``tooloop.tools`` plugin called ``name`` (a list, whatever the plugin names).

    Raises :class:`~tooloop.errors.ArgumentValueError` when no installed plugin has that name, and
    :class:`~tooloop.errors.ConfigurationError` when the plugin fails to load.
    """
    from .errors import ArgumentValueError, ConfigurationError

    matches = [p for p in plugins() if p.kind == "tools" and p.name == name]
    if not matches:
        known = ", ".join(p.name for p in plugins() if p.kind == "tools") or "none installed"
        raise ArgumentValueError(f"no tools plugin named {name!r} (tools plugins: {known})")
    plugin = matches[0]
    try:
        value = load(plugin)
    except Exception as exc:
        raise ConfigurationError(
            f"tools plugin {name!r} of {plugin.package} failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    return list(value) if isinstance(value, list | tuple) else [value]


def check(plugin: Plugin) -> str | None:
    """None when the plugin loads, else what went wrong, in one line."""
    try:
        load(plugin)
    except BaseException as exc:  # a plugin's import may raise anything, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


def _warn(message: str) -> None:
    warnings.warn(message, PluginWarning, stacklevel=3)
