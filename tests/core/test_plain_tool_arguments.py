"""Tools whose parameters are all plain (``str``, ``int``, ``float``, ``bool``, or one of them ``| None``).

Their schema is written without pydantic and arguments of the exact types are accepted without
it; everything else goes to the pydantic model. Each test checks the plain path against that
model (what the tool would do without the shortcut): the same schema, down to the JSON text,
the same validated arguments (types included) and the same error messages.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import pytest

from tooloop import Tool, ToolArgumentsError, ToolContext, tool
from tooloop.messages import thaw
from tooloop.tools.schema import _clean

SRC = Path(__file__).resolve().parents[2] / "src"


def add(a: int, b: int) -> int:
    """Add two integers and return their sum."""
    return a + b


def everything(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    maybe: int | None,
    note: Optional[str] = None,  # noqa: UP045  (the spelling is the point)
    scale: float = 1,
    label: Annotated[str, "Shown to the user"] = "",
    empty: Annotated[str, ""] = "x",
    limit: int = -3,
    on: bool = True,
    weight: float = 2.5,
    nothing: int = None,  # type: ignore[assignment]  # noqa: RUF013  (a None default without | None, as people write)
) -> str:
    """Use every plain kind.

    Args:
        text: Some text.
        count: How many.
    """
    return ""


def ctx(query: str, context: ToolContext, n: int = 2) -> str:
    """Search: with a context (not in the schema)."""
    return ""


def nothing_at_all() -> str:
    return ""


PLAIN = [add, everything, ctx, nothing_at_all]


def _model_schema(t: Tool) -> dict[str, Any]:
    assert t.arguments is not None
    schema: dict[str, Any] = _clean(t.arguments.model.model_json_schema())
    schema.setdefault("properties", {})
    return schema


def _by_pydantic(t: Tool, arguments: dict[str, Any]) -> Any:
    """What the tool's pydantic model makes of ``arguments``: the values with their types, or the error."""
    assert t.arguments is not None
    from pydantic import ValidationError

    try:
        parsed = t.arguments.model.model_validate(thaw(arguments))
    except ValidationError as exc:
        return ("error", [(e["loc"], e["msg"]) for e in exc.errors(include_url=False)])
    return _typed(dict(parsed.__dict__))


def _by_tool(t: Tool, arguments: dict[str, Any]) -> Any:
    try:
        return _typed(t.validate(arguments))
    except ToolArgumentsError as exc:
        return ("error", str(exc))


def _typed(values: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(k, type(v).__name__, repr(v)) for k, v in values.items()]


@pytest.mark.parametrize("fn", PLAIN, ids=lambda f: f.__name__)
def test_the_schema_is_the_one_pydantic_gives_to_the_json_text(fn: Any) -> None:
    t = tool(fn)
    assert json.dumps(t.parameters) == json.dumps(_model_schema(t))


VALUES: list[Any] = [
    0,
    7,
    -(2**63),
    2**63,
    2**63 + 1,
    10**30,
    1.0,
    2.5,
    float("inf"),
    float("nan"),
    True,
    False,
    None,
    "",
    "12",
    "2.5",
    "true",
    "yes",
    "\ud800",
    [1],
    {"a": 1},
]


def _cases() -> list[dict[str, Any]]:
    base = {"text": "t", "count": 1, "ratio": 0.5, "flag": False, "maybe": None}
    cases: list[dict[str, Any]] = [base, {}, {**base, "extra": 1}, {k: v for k, v in base.items() if k != "count"}]
    for name in [*base, "note", "scale", "label", "limit", "on", "weight", "nothing"]:
        cases += [{**base, name: value} for value in VALUES]
    return cases


@pytest.mark.parametrize("arguments", _cases(), ids=lambda a: repr(a)[:60])
def test_validation_matches_the_pydantic_model(arguments: dict[str, Any]) -> None:
    t = tool(everything)
    mine, theirs = _by_tool(t, arguments), _by_pydantic(t, arguments)
    if theirs[0] == "error":
        problems = "; ".join(f"{'.'.join(str(p) for p in loc) or 'arguments'}: {msg}" for loc, msg in theirs[1])
        assert mine == ("error", f"invalid arguments for everything: {problems}")
    elif any(math.isnan(v) for v in arguments.values() if isinstance(v, float)):
        assert [(k, tp) for k, tp, _ in mine] == [(k, tp) for k, tp, _ in theirs]  # nan != nan
    else:
        assert mine == theirs


def test_the_two_argument_tool_accepts_and_refuses_as_pydantic_does() -> None:
    t = tool(add)
    for arguments in ({"a": 1, "b": 2}, {"a": "1", "b": 2}, {"a": 1.5, "b": 2}, {"a": True, "b": 0}, {"a": 1}, {}):
        mine, theirs = _by_tool(t, arguments), _by_pydantic(t, arguments)
        assert mine[0] == theirs[0] == "error" or mine == theirs, arguments


def test_the_context_parameter_is_injected_not_validated() -> None:
    t = tool(ctx)
    assert t.context_param == "context"
    assert t.validate({"query": "q"}) == {"query": "q", "n": 2}


def test_validated_arguments_are_a_copy() -> None:
    t = tool(add)
    given = {"a": 1, "b": 2}
    got = t.validate(given)
    got["a"] = 5
    assert given == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    "source",
    [
        "def f(a: list[int]) -> int: return 0",  # not plain: pydantic describes it
        "def f(model_x: int) -> int: return 0",  # a name pydantic reserves
        "def f(a: int = [1]) -> int: return 0",  # a default that is not plain
        "def f(a: None | int = None) -> int: return 0",  # pydantic lists null first
    ],
)
def test_other_signatures_keep_the_pydantic_path(source: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    t = tool(namespace["f"])
    assert t.arguments is not None and t.arguments._plain is None
    assert t.parameters == _model_schema(t)


def test_names_pydantic_models_have_keep_the_pydantic_path() -> None:
    from pydantic import BaseModel

    from tooloop.tools.schema import _MODEL_NAMES

    public = {n for n in dir(BaseModel) if not n.startswith(("_", "model_"))}
    assert public <= _MODEL_NAMES


def test_an_agent_with_plain_tools_imports_no_pydantic_until_an_argument_needs_it() -> None:
    code = """
import json, sys
from tooloop import Agent, get_model

async def add(a: int, b: int) -> int:
    '''Add two integers and return their sum.'''
    return a + b

agent = Agent(get_model("test:echo"), tools=[add])
(t,) = agent.tools
seen = [m in sys.modules for m in ("pydantic", "docstring_parser")]
exact = t.validate({"a": 1, "b": 2})
seen += ["pydantic" in sys.modules]
converted = t.validate({"a": "3", "b": 2})
print(json.dumps([seen, exact, converted, "pydantic" in sys.modules]))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(SRC)}
    )
    assert json.loads(out.stdout) == [[False, False, False], {"a": 1, "b": 2}, {"a": 3, "b": 2}, True]
