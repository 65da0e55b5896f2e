"""Values the loop builds on its hot paths (through a draft, see tooloop._frozen) are the very values
the public constructors make: same type, fields, equality, hash, repr, pickling and immutability."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import weakref
from decimal import Decimal
from typing import Any

import pytest

from tooloop import ThinkingPart, ToolCallMessage, ToolCallStatus, Usage
from tooloop._frozen import draft_of
from tooloop.errors import ToolError
from tooloop.messages import FrozenDict, FrozenList, TextContent, tool_call_message


def _same(built: Any, made: Any) -> None:
    assert type(built) is type(made)
    for f in dataclasses.fields(made):
        assert getattr(built, f.name) == getattr(made, f.name), f.name
        assert type(getattr(built, f.name)) is type(getattr(made, f.name)), f.name
    assert built == made
    assert repr(built) == repr(made)
    assert pickle.loads(pickle.dumps(built)) == made
    assert copy.deepcopy(built) == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.tool_name = "other"
    if made.result is None or not isinstance(made.result, dict | list | FrozenDict | FrozenList):
        assert hash(built) == hash(made)


CASES: list[dict[str, Any]] = [
    {"tool_name": "add", "tool_call_id": "c1"},
    {
        "tool_name": "add",
        "tool_call_id": "c2",
        "arguments": {"a": [1, {"b": 2}]},
        "result": {"sum": [3]},
        "message": "adding",
        "status": ToolCallStatus.OK,
        "content": '{"sum": [3]}',
        "batch_id": "c2@4",
        "raw_arguments": '{"a": ',
        "thinking": (ThinkingPart("hm"),),
        "provider_data": {"openai": {"x": 1}},
        "parts": (TextContent("t"),),
        "response_id": "r1",
        "usage": Usage(3, 4, 1, cost=Decimal("0.1")),
    },
    {"tool_name": "add", "tool_call_id": "c3", "error": ToolError("no"), "status": ToolCallStatus.ERROR},
    {"tool_name": "add", "tool_call_id": "c4", "result": [1, 2], "status": ToolCallStatus.STARTED, "batch_id": ""},
    {"tool_name": "add", "tool_call_id": "c5", "result": {1, 2}, "error": KeyError("k")},
]


@pytest.mark.parametrize("given", CASES)
def test_tool_call_message_is_the_constructors_value(given: dict[str, Any]) -> None:
    made = ToolCallMessage(**given)
    fields = {f.name: f.default for f in dataclasses.fields(ToolCallMessage) if f.name != "error_type"}
    values = {name: given.get(name, default) for name, default in fields.items()}
    built = tool_call_message(**values)
    _same(built, made)
    assert built.error_type == made.error_type
    assert built.batch_id == made.batch_id


def test_a_draft_refuses_a_class_it_cannot_stand_in_for() -> None:
    class Plain:
        pass

    with pytest.raises(TypeError, match="not a slotted dataclass"):
        draft_of(Plain)


def test_a_built_message_takes_weak_references_like_a_made_one() -> None:
    status = ToolCallStatus.OK
    built = tool_call_message("add", "c1", {}, None, None, "", status, "", "", None, (), {}, (), None, None, None)
    assert weakref.ref(built)() is built
