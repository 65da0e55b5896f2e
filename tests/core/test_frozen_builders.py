"""Values the loop builds on its hot paths (through a draft, see tooloop._frozen) are the very values
the public constructors make: same type, fields, equality, hash, repr, pickling and immutability."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import sys
from decimal import Decimal
from typing import Any

import pytest

from tooloop import (
    ModelResponse,
    StopReason,
    ThinkingPart,
    ToolCall,
    ToolCallMessage,
    ToolCallStatus,
    Usage,
    UserMessage,
)
from tooloop._frozen import FACTORY, draft_of
from tooloop.errors import ToolError
from tooloop.messages import (
    FrozenDict,
    FrozenList,
    PendingCost,
    TextContent,
    pending_cost,
    summed,
    tool_call_message,
    with_usage,
)
from tooloop.models.base import ModelRequest, ModelSettings


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


def test_a_built_message_has_the_layout_of_a_made_one() -> None:
    status = ToolCallStatus.OK
    built = tool_call_message("add", "c1", {}, None, None, "", status, "", "", None, (), {}, (), None, None, None)
    made = ToolCallMessage(tool_name="add", tool_call_id="c1", arguments={}, status=status)
    assert type(built) is type(made) is ToolCallMessage
    assert sys.getsizeof(built) == sys.getsizeof(made)
    assert not hasattr(built, "__dict__")


WRITTEN_OUT = [ToolCall, ModelResponse, ModelRequest, Usage]
"""Classes whose __init__ is written out (filled through a draft) instead of the dataclass's."""


@pytest.mark.parametrize("cls", WRITTEN_OUT)
def test_a_written_out_init_has_the_dataclass_signature(cls: type) -> None:
    parameters = list(inspect.signature(cls).parameters.values())
    fields = [f for f in dataclasses.fields(cls) if f.init]
    assert [p.name for p in parameters] == [f.name for f in fields]
    for p, f in zip(parameters, fields, strict=True):
        assert (p.kind is inspect.Parameter.KEYWORD_ONLY) == f.kw_only, f.name
        if f.default is not dataclasses.MISSING:
            assert p.default == f.default, f.name
        elif f.default_factory is not dataclasses.MISSING:
            assert p.default is FACTORY, f.name
        else:
            assert p.default is inspect.Parameter.empty, f.name


def test_model_response_and_tool_call_keep_their_checks_and_defaults() -> None:
    call = ToolCall("c1", "add")
    assert call.arguments == {} and call.provider_data is None
    assert ToolCall("c2", "add").arguments is not call.arguments  # a new dict each time
    response = ModelResponse("hi", [call])  # type: ignore[arg-type]  # a list is kept as a tuple
    assert response.tool_calls == (call,) and response.stop_reason is StopReason.TOOL_USE
    assert response.usage == Usage() and response.provider_data == {}
    assert ModelResponse().stop_reason is StopReason.END_TURN
    assert ModelResponse(stop_reason="max_tokens").stop_reason is StopReason.MAX_TOKENS  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ModelResponse(stop_reason="nonsense")  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        response.text = "other"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(response)) == response
    assert copy.deepcopy(response) == response
    assert dataclasses.replace(response, text="x") == ModelResponse("x", (call,), usage=Usage())
    assert hash(ToolCall("c1", "add", "{}")) == hash(ToolCall("c1", "add", "{}"))
    assert repr(response).startswith("ModelResponse(text='hi'") and " tokens=" not in repr(response)


def test_a_subclass_is_filled_as_the_dataclass_would() -> None:
    class Mine(ModelResponse):  # no __slots__: instances have a __dict__ (another layout)
        pass

    mine = Mine("hi")
    assert type(mine) is Mine and mine.text == "hi" and mine.stop_reason is StopReason.END_TURN
    with pytest.raises(dataclasses.FrozenInstanceError):
        mine.text = "other"  # type: ignore[misc]


def test_model_request_keeps_its_defaults() -> None:
    request = ModelRequest([UserMessage("hi")])
    assert request.tools == () and request.settings == ModelSettings() and request.tool_choice == "auto"
    assert request.output is None and request.cache_key is None and request.tool_search is False
    assert dataclasses.replace(request, tool_choice="none").tool_choice == "none"
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.tools = ()  # type: ignore[misc]


def test_usage_keeps_its_values_and_its_pending_cost() -> None:
    usage = Usage(1, 2, 3, 4, 5, 6, 7, Decimal("0.5"), True, 8)
    assert dataclasses.astuple(usage) == (1, 2, 3, 4, 5, 6, 7, Decimal("0.5"), True, 8)
    assert usage == Usage(1, 2, 3, 4, 5, 6, 7, Decimal("0.5"), True, 8) and Usage() == Usage()
    assert usage + Usage(requests=1, cost=Decimal("0.25")) == Usage(1, 2, 4, 4, 5, 6, 7, Decimal("0.75"), True, 8)
    assert pickle.loads(pickle.dumps(usage)) == usage and hash(usage) == hash(dataclasses.replace(usage))
    with pytest.raises(dataclasses.FrozenInstanceError):
        usage.requests = 0  # type: ignore[misc]


def test_with_usage_is_replace_with_another_usage() -> None:
    call = ToolCall("c", "add", {"a": 1})
    response = ModelResponse(
        "hi",
        (call,),
        StopReason.MAX_TOKENS,
        Usage(1, 2),
        thinking=(ThinkingPart("hm"),),
        refusal="no",
        model="m",
        provider_data={"x": {"y": 1}},
        response_id="r",
        stop_sequence="END",
    )
    usage = Usage(3, 4, cost=Decimal("0.5"))
    built, made = with_usage(response, usage), dataclasses.replace(response, usage=usage)
    assert type(built) is ModelResponse
    for f in dataclasses.fields(made):
        assert getattr(built, f.name) is getattr(made, f.name), f.name
    assert built == made and repr(built) == repr(made)
    assert pickle.loads(pickle.dumps(built)) == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.text = "other"  # type: ignore[misc]

    class Mine(ModelResponse):
        pass

    mine = with_usage(Mine("hi"), usage)
    assert type(mine) is Mine and mine.usage is usage and mine.text == "hi"


class _Fixed(PendingCost):
    """A cost worked out when read: ``value`` (None: no price)."""

    __slots__ = ("fixed",)

    def __init__(self, fixed: Decimal | None) -> None:
        super().__init__()
        self.fixed = fixed

    def work_out(self) -> Decimal | None:
        return self.fixed


def test_summed_is_the_sum_with_plus_for_every_mix_of_costs() -> None:
    def parts() -> list[Usage]:  # held costs: none, a price, pending ones (priced and unpriced)
        return [
            Usage(1, 2, 1, 0, 3, 4, 5, None, False, 1),
            Usage(10, 20, 1, 2, 0, 0, 0, Decimal("0.25"), False, 0),
            pending_cost(Usage(100, 200, 1), _Fixed(Decimal("0.5"))),
            Usage(1000, 0, 0, 3, estimated=True),
            pending_cost(Usage(5, 5, 1, cache_write_1h_tokens=2), _Fixed(None)),
            Usage(7, 7, 1, cost=Decimal("1")),
        ]

    for start in range(len(parts())):
        for end in range(start, len(parts()) + 1):
            left, right = parts(), parts()
            added = left[start]
            for usage in left[start + 1 : end]:
                added = added + usage
            total = summed(right[start], right[start + 1 : end])
            assert dataclasses.astuple(total) == dataclasses.astuple(added), (start, end)
    assert summed(Usage(), []) == Usage() and summed(Usage(), [Usage(1, requests=1)]) == Usage(1, requests=1)
