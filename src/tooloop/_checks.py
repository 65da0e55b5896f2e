"""Checks for values handed to tooloop, raising where the value is given, naming the parameter."""

from __future__ import annotations

import math
from typing import Any

from .errors import ArgumentTypeError, ArgumentValueError

__all__ = ["describe", "require", "require_count", "require_seconds", "require_text"]


def describe(value: Any) -> str:
    """``value`` as an error message shows it: its type and a short repr."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def require(value: Any, expected: type | tuple[type, ...], param: str, fix: str) -> None:
    """Raise :class:`ArgumentTypeError` unless ``value`` is an instance of ``expected``."""
    if not isinstance(value, expected):
        raise ArgumentTypeError(f"{param} got {describe(value)}; {fix}")


def require_text(value: Any, param: str, *, optional: bool = False, empty: bool = True) -> None:
    """A string (or None when ``optional``); an empty one only when ``empty``."""
    if value is None and optional:
        return
    require(value, str, param, f"pass a string{' or None' if optional else ''}")
    if not empty and not value.strip():
        raise ArgumentValueError(f"{param} is an empty string; pass some text")


def require_count(value: Any, param: str, minimum: int, *, optional: bool = False) -> None:
    """A whole number of at least ``minimum`` (or None when ``optional``); ``True`` is not a number."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        none = " (or None)" if optional else ""
        raise ArgumentTypeError(f"{param} got {describe(value)}; pass a whole number of at least {minimum}{none}")
    if value < minimum:
        raise ArgumentValueError(f"{param} is {value}; it must be at least {minimum}")


def require_seconds(value: Any, param: str) -> None:
    """A positive, finite number of seconds, or None for no limit."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentTypeError(f"{param} got {describe(value)}; pass seconds as a number, or None for no limit")
    if not value > 0 or math.isinf(value):
        raise ArgumentValueError(f"{param} is {value}; pass a positive number of seconds, or None for no limit")
