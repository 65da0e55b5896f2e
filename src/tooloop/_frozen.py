"""Building frozen dataclasses on hot paths without ``object.__setattr__`` per field.

A ``@dataclass(frozen=True, slots=True)`` refuses assignment, so its ``__init__`` sets each field
through ``object.__setattr__``: a call of several hundred machine instructions per field, and
messages, responses and usages with ten to seventeen fields are made several times per turn.
A *draft* is a subclass that adds no slot (so the same memory layout) and sets attributes as any
plain class does: its fields are set by ordinary assignment, then the instance becomes the frozen
class with one assignment to ``__class__``. What comes out is an ordinary instance of the frozen
class (same fields, equality, hash, repr, pickling, immutability); only the way it was filled
differs.

    draft = new_draft(ToolCallDraft)   # ToolCallDraft = draft_of(ToolCall)
    draft.id, draft.name, draft.arguments, draft.provider_data = ...
    draft.__class__ = ToolCall         # every field set first: a slot left unset has no value

Used only where every field is set by the code itself (private builders next to the class).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FACTORY", "become", "draft_of", "new_draft", "thawed"]


def draft_of(cls: type) -> type:
    """A mutable stand-in for the frozen slotted dataclass ``cls``: a subclass adding no slot (so
    its instances have the same layout) whose attributes are set as those of any plain class."""
    slots = cls.__dict__.get("__slots__")
    if not isinstance(slots, tuple) or "__dict__" in slots:
        raise TypeError(f"{cls.__name__} is not a slotted dataclass a draft can stand in for")
    # both: a __delattr__ of the frozen class left in place would route every assignment through Python
    plain = {"__setattr__": object.__setattr__, "__delattr__": object.__delattr__}
    namespace = {"__slots__": (), "__module__": cls.__module__, **plain}
    return type(f"{cls.__name__}Draft", (cls,), namespace)


new_draft: Any = object.__new__
"""``new_draft(Draft)``: a blank draft (typed ``Any``: its fields are the frozen class's)."""

_set_class = object.__setattr__

become: Any = object.__setattr__
"""``become(instance, "__class__", Draft)``: what :func:`thawed` does for an instance of the
frozen class itself, without a call of its own (in the ``__init__`` of the values made most;
``type(self) is Frozen`` checked first, any other class goes through :func:`thawed`)."""


def thawed(instance: Any, draft: type) -> Any:
    """``instance`` (being built by its frozen class's own ``__init__``) as a ``draft``: the
    ``__init__`` sets every field by plain assignment and ends with ``draft.__class__ = cls``
    (``cls`` the instance's class, taken before). One ``object.__setattr__`` instead of one per field.

    An instance of a subclass (whose layout may differ) gets a stand-in that sets each field
    through ``object.__setattr__``, as the dataclass's own ``__init__`` would.
    """
    if type(instance) is draft.__base__:
        _set_class(instance, "__class__", draft)
        return instance
    return _Through(instance)


class _Through:
    """Sets attributes of a frozen instance the way a frozen dataclass's ``__init__`` does."""

    __slots__ = ("_instance",)
    _instance: Any

    def __init__(self, instance: Any) -> None:
        _set_class(self, "_instance", instance)

    def __setattr__(self, name: str, value: Any) -> None:
        _set_class(self._instance, name, value)


class _Factory:
    """The default of a field whose dataclass default is a factory: each call makes a new value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"  # what the dataclass's own __init__ shows for such a default


FACTORY: Any = _Factory()
"""The default of a hand-written ``__init__``'s parameter whose field has a ``default_factory``."""
