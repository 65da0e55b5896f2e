"""``typing.TypedDict`` for pydantic on Python 3.11.

pydantic describes only ``typing_extensions.TypedDict`` classes before Python 3.12. A user's
``typing.TypedDict`` (in an ``output_type`` or a tool parameter) is rebuilt here as the same
class made with ``typing_extensions``: same name, docstring, fields and required keys.
"""

from __future__ import annotations

import functools
import sys
import types
import typing
from typing import Any

__all__ = ["portable_type"]


def portable_type(annotation: Any) -> Any:
    """``annotation`` with every ``typing.TypedDict`` in it made describable by pydantic."""
    if sys.version_info >= (3, 12):
        return annotation
    return _convert(annotation)


def _convert(annotation: Any) -> Any:
    if typing.is_typeddict(annotation):
        return _rebuilt(annotation) if _needs_rebuild(annotation) else annotation
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if not args or origin is None:
        return annotation
    converted = tuple(_convert(a) for a in args)
    if converted == args:
        return annotation
    if origin is typing.Annotated:
        return typing.Annotated[(converted[0], *annotation.__metadata__)]
    return _with_args(annotation, origin, converted)


def _with_args(annotation: Any, origin: Any, args: tuple[Any, ...]) -> Any:
    if origin is typing.Union or isinstance(annotation, types.UnionType):
        return typing.Union[args]  # noqa: UP007  # rebuilding a union from a tuple of types
    if isinstance(annotation, types.GenericAlias):  # list[X], dict[K, V]...
        return types.GenericAlias(origin, args)
    return annotation.copy_with(args)  # typing.List[X] and the like


def _needs_rebuild(cls: Any) -> bool:
    import typing_extensions

    return not isinstance(cls, typing_extensions._TypedDictMeta)  # type: ignore[attr-defined]


@functools.cache
def _rebuilt(cls: Any) -> Any:
    import typing_extensions

    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {
        name: _marked(_convert(hint), name in cls.__required_keys__, cls.__total__) for name, hint in hints.items()
    }
    new = typing_extensions.TypedDict(cls.__name__, fields, total=cls.__total__)  # type: ignore[misc]
    new.__doc__ = cls.__doc__
    new.__module__ = cls.__module__
    new.__qualname__ = cls.__qualname__
    return new


def _marked(hint: Any, required: bool, total: bool) -> Any:
    import typing_extensions

    origin = typing.get_origin(hint)
    if origin in (typing_extensions.Required, typing_extensions.NotRequired):
        return hint
    if required and not total:
        return typing_extensions.Required[hint]
    if not required and total:
        return typing_extensions.NotRequired[hint]
    return hint
