"""Bad input fails where it is given, as a tooloop error naming the parameter and the fix."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tooloop import (
    Agent,
    ArgumentTypeError,
    ArgumentValueError,
    ConfigurationError,
    Limits,
    ModelContractError,
    ModelRequest,
    ModelResponse,
    StopReason,
    ToolCall,
    UserMessage,
    tool,
)
from tooloop.testing import FunctionModel, ScriptedModel


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


MODEL = FunctionModel(lambda request: "ok")


def _agent(**options: Any) -> Callable[[], object]:
    return lambda: Agent(MODEL, **options)


def _run(*args: Any, **kwargs: Any) -> Callable[[], object]:
    return lambda: Agent(MODEL).run_sync(*args, **kwargs)


# (what was given, the call, the error class, text the message must contain: the parameter)
BAD_INPUTS: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    ("misspelt provider", lambda: Agent("opneai:gpt-4.1"), ArgumentValueError, "did you mean 'openai'"),
    ("model without provider", lambda: Agent("gpt-4.1"), ArgumentValueError, "provider:model"),
    ("unregistered model config", lambda: Agent("@nowhere"), ArgumentValueError, "register_model_config"),
    ("model=123", lambda: Agent(123), ArgumentTypeError, "model got int 123"),  # type: ignore[arg-type]
    ("model=None", lambda: Agent(None), ArgumentTypeError, "model got NoneType"),  # type: ignore[arg-type]
    ("tools=add", _agent(tools=add), ArgumentTypeError, "tools=[add]"),
    ("tools='add'", _agent(tools="add"), ArgumentTypeError, "tools got str"),
    ("limits=dict", _agent(limits={"max_turns": 3}), ArgumentTypeError, "limits got dict"),
    ("limits={}", _agent(limits={}), ArgumentTypeError, "limits got dict"),
    ("hooks=dict", _agent(hooks={}), ArgumentTypeError, "hooks got dict"),
    ("approve='yes'", _agent(approve="yes"), ArgumentTypeError, "approve got str"),
    ("settings=dict", _agent(settings={"temperature": 0}), ArgumentTypeError, "settings got dict"),
    ("system=5", _agent(system=5), ArgumentTypeError, "system got int"),
    ("store=5", _agent(store=5), ArgumentTypeError, "store got int"),
    ("context='recent'", _agent(context="recent"), ArgumentTypeError, "context got str"),
    ("session_id='' on the agent", _agent(session_id=""), ArgumentValueError, "session_id is an empty string"),
    ("output_type=12345", _agent(output_type=12345), ArgumentTypeError, "output_type got int 12345"),
    ("Limits(max_turns='5')", lambda: Limits(max_turns="5"), ArgumentTypeError, "max_turns"),  # type: ignore[arg-type]
    ("Limits(max_turns=True)", lambda: Limits(max_turns=True), ArgumentTypeError, "max_turns"),
    ("Limits(max_turns=0)", lambda: Limits(max_turns=0), ArgumentValueError, "max_turns"),
    ("negative timeout", lambda: Limits(timeout=-1), ArgumentValueError, "timeout"),
    ("zero tool_timeout", lambda: Limits(tool_timeout=0), ArgumentValueError, "tool_timeout"),
    ("timeout='5'", lambda: Limits(timeout="5"), ArgumentTypeError, "timeout"),  # type: ignore[arg-type]
    ("negative max_tool_result_chars", lambda: Limits(max_tool_result_chars=-1), ArgumentValueError, "max_tool_result"),
    ("max_total_tokens=0", lambda: Limits(max_total_tokens=0), ArgumentValueError, "max_total_tokens"),
    ("tool(timeout=-1)", lambda: tool(timeout=-1)(add), ArgumentValueError, "timeout of tool 'add'"),
    ("tool(timeout='1')", lambda: tool(timeout="1")(add), ArgumentTypeError, "timeout of tool 'add'"),  # type: ignore[arg-type]
    ("tool(max_concurrency=0)", lambda: tool(max_concurrency=0)(add), ArgumentValueError, "max_concurrency"),
    ("with_limits(dict)", lambda: Agent(MODEL).with_limits({}), ArgumentTypeError, "limits got dict"),  # type: ignore[arg-type]
    ("with_model(123)", lambda: Agent(MODEL).with_model(123), ArgumentTypeError, "model got int"),  # type: ignore[arg-type]
    (
        "with_tools('add')",
        lambda: Agent(MODEL).with_tools("add"),
        ArgumentTypeError,
        "got str 'add'",
    ),  # type: ignore[arg-type]
    ('run("")', _run(""), ArgumentValueError, "prompt is an empty string"),
    ('run("   ")', _run("   "), ArgumentValueError, "prompt is an empty string"),
    ("run(None) with nothing to continue", _run(None), ArgumentValueError, "no conversation to continue"),
    ("run(12345)", _run(12345), ArgumentTypeError, "prompt got int"),
    ('history="text"', _run("hi", history="text"), ArgumentTypeError, "history got str"),
    (
        "OpenAI-style dicts in history",
        _run("hi", history=[{"role": "user", "content": "hello"}]),
        ArgumentTypeError,
        "history[0] got dict",
    ),
    ('session_id=""', _run("hi", session_id=""), ArgumentValueError, "session_id is an empty string"),
    ('approvals=["abc"]', _run("hi", approvals=["abc"]), ArgumentTypeError, "approvals holds str"),
    ('approvals="abc"', _run("hi", approvals="abc"), ArgumentTypeError, "approvals got str"),
    ('cancel="yes"', _run("hi", cancel="yes"), ArgumentTypeError, "cancel got str"),
    ('run(approve="yes")', _run("hi", approve="yes"), ArgumentTypeError, "approve got str"),
]


@pytest.mark.parametrize(
    ("call", "error", "needle"), [case[1:] for case in BAD_INPUTS], ids=[case[0] for case in BAD_INPUTS]
)
def test_bad_input_raises_a_tooloop_error_naming_the_parameter(
    call: Callable[[], object], error: type[Exception], needle: str
) -> None:
    with pytest.raises(error) as caught:
        call()
    assert isinstance(caught.value, ConfigurationError)
    assert needle in str(caught.value)


def test_continuing_a_stored_session_that_holds_nothing_names_the_session(tmp_path: Path) -> None:
    model = ScriptedModel(["never sent"])
    agent = Agent(model, store=f"sqlite:///{tmp_path}/sessions.db")
    with pytest.raises(ArgumentValueError, match="session 'empty' holds no conversation to continue"):
        agent.run_sync(None, session_id="empty")
    assert model.requests == []


def test_argument_errors_are_also_the_builtin_type_and_value_errors() -> None:
    with pytest.raises(TypeError):
        Agent(123)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Limits(timeout=-1)


def test_bad_input_is_refused_before_the_model_is_asked() -> None:
    model = ScriptedModel(["never sent"])
    with pytest.raises(ArgumentTypeError):
        Agent(model).run_sync("hi", history=[{"role": "user", "content": "hello"}])
    assert model.requests == []


def test_a_model_string_is_checked_when_the_agent_is_built_without_importing_any_sdk() -> None:
    script = """
import sys, tooloop
agent = tooloop.Agent("openai:gpt-4.1")
try:
    tooloop.Agent("opneai:gpt-4.1")
except tooloop.ConfigurationError as exc:
    message = str(exc)
sdks = sorted(m for m in ("openai", "anthropic", "google.genai", "pydantic") if m in sys.modules)
print(__import__("json").dumps({"message": message, "sdks": sdks}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["sdks"] == []
    assert "unknown provider 'opneai'" in report["message"]
    assert "known providers: anthropic" in report["message"]


class _NoneModel:
    name = "none-model"

    async def respond(self, request: ModelRequest, on_event: Any = None) -> Any:
        return None


class _NullArgumentsModel:
    name = "null-arguments"

    async def respond(self, request: ModelRequest, on_event: Any = None) -> ModelResponse:
        return ModelResponse(tool_calls=(ToolCall("c1", "add", None),))  # type: ignore[arg-type]


def test_a_custom_model_returning_none_gets_an_error_naming_the_contract() -> None:
    with pytest.raises(ModelContractError, match=r"_NoneModel.respond returned None: Model.respond"):
        Agent(_NoneModel()).run_sync("hi")


def test_a_custom_model_returning_a_tool_call_without_arguments_gets_an_error_naming_the_contract() -> None:
    with pytest.raises(ModelContractError, match=r"ToolCall.arguments must be a dict or the JSON text") as caught:
        Agent(_NullArgumentsModel(), tools=[add]).run_sync("hi")
    assert caught.value.transcript is not None
    assert list(caught.value.transcript) == [UserMessage("hi")]


class Place(typing.TypedDict):
    """A place and its country."""

    name: str
    country: str


class Trip(typing.TypedDict, total=False):
    places: typing.Required[list[Place]]
    note: str


def test_a_typing_typeddict_works_as_output_type() -> None:
    model = ScriptedModel(['{"places": [{"name": "Lyon", "country": "FR"}]}'])
    result = Agent(model, output_type=Trip).run_sync("plan a trip")
    assert result.output == {"places": [{"name": "Lyon", "country": "FR"}]}
    schema = model.requests[0].output
    assert schema is not None and schema.name == "Trip"
    assert schema.schema["required"] == ["places"]
    assert "note" in schema.schema["properties"]


def test_a_typing_typeddict_works_as_a_tool_parameter() -> None:
    seen: list[Any] = []

    def visit(place: Place) -> str:
        """Visit a place."""
        seen.append(place)
        return "visited"

    arguments = {"place": {"name": "Lyon", "country": "FR"}}
    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("c1", "visit", arguments),)), "done"])
    result = Agent(model, tools=[visit]).run_sync("go")
    assert result.stop_reason is StopReason.END_TURN
    assert seen == [{"name": "Lyon", "country": "FR"}]
    assert result.transcript.tool_invocations[0].content == "visited"


def positional(a: int, /, b: int) -> int:
    return a + b


async def stream_items() -> typing.AsyncIterator[int]:
    yield 1


def items() -> typing.Iterator[int]:
    yield 1


def lock_user(lock: threading.Lock) -> None:
    """Take a lock."""


def _method_tool() -> object:
    class Repo:
        @tool
        def search(self, query: str) -> str:
            return query

    return Repo


BAD_TOOLS: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    ("positional-only parameter", lambda: tool(positional), ArgumentTypeError, "parameter 'a' of tool 'positional'"),
    ("@tool on a method", _method_tool, ArgumentTypeError, "tool(instance.search)"),
    ("name with a space and '!'", lambda: tool(name="my tool!")(add), ArgumentValueError, "'my tool!'"),
    ("name of 100 characters", lambda: tool(name="a" * 100)(add), ArgumentValueError, "(100 characters)"),
    ("async generator", lambda: tool(stream_items), ArgumentTypeError, "tool 'stream_items' is a generator"),
    ("generator", lambda: tool(items), ArgumentTypeError, "tool 'items' is a generator"),
    ("type pydantic cannot describe", lambda: tool(lock_user), ArgumentTypeError, "parameter 'lock' of tool"),
]


@pytest.mark.parametrize(("call", "error", "needle"), [c[1:] for c in BAD_TOOLS], ids=[c[0] for c in BAD_TOOLS])
def test_a_tool_that_could_never_be_called_is_refused_when_it_is_defined(
    call: Callable[[], object], error: type[Exception], needle: str
) -> None:
    with pytest.raises(error, match=None) as caught:
        call()
    assert isinstance(caught.value, ConfigurationError)
    assert needle in str(caught.value)


def test_a_bound_method_is_a_tool_without_self() -> None:
    class Repo:
        def __init__(self) -> None:
            self.prefix = "found:"

        def search(self, query: str) -> str:
            """Search the repository."""
            return self.prefix + query

    search = tool(Repo().search)
    assert list(search.parameters["properties"]) == ["query"]
    model = ScriptedModel([ModelResponse(tool_calls=(ToolCall("c1", "search", {"query": "x"}),)), "done"])
    result = Agent(model, tools=[search]).run_sync("go")
    assert result.transcript.tool_invocations[0].content == "found:x"
