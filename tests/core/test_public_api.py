"""The public API: what ``import tooloop`` offers, and what it must not drag in."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tooloop

PUBLIC = [
    "Agent",
    "ApprovalDecided",
    "ApprovalDecision",
    "ApprovalMismatchError",
    "ApprovalRequest",
    "ApprovalRequested",
    "ArgumentTypeError",
    "ArgumentValueError",
    "AssistantMessage",
    "AudioContent",
    "AuthenticationError",
    "BadRequestError",
    "CacheBreak",
    "CacheMiss",
    "CancelToken",
    "ConfigurationError",
    "ConflictError",
    "ContentPart",
    "ContextBudgetError",
    "ContextLengthError",
    "ContextPolicy",
    "Conversation",
    "CorruptDataError",
    "DocumentContent",
    "EmbeddedResource",
    "Event",
    "EventStream",
    "FallbackModel",
    "Hooks",
    "ImageContent",
    "Limits",
    "LoopControl",
    "Message",
    "MessageAdded",
    "Model",
    "ModelConfig",
    "ModelContractError",
    "ModelRequest",
    "ModelRequestFinished",
    "ModelRequestStarted",
    "ModelResponse",
    "ModelResponseError",
    "ModelSettings",
    "OutputValidationError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderOverloadedError",
    "ProviderTimeoutError",
    "RateLimitError",
    "ResourceLink",
    "RestoredToolError",
    "RunError",
    "RunFinished",
    "RunResult",
    "RunTimeoutError",
    "SessionBusyError",
    "SessionInfo",
    "SessionNotFoundError",
    "StepContext",
    "StopReason",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "SubagentEvent",
    "SyncEventStream",
    "SystemMessage",
    "TextContent",
    "TextDelta",
    "ThinkingDelta",
    "ThinkingPart",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallFinished",
    "ToolCallMessage",
    "ToolCallProgress",
    "ToolCallStarted",
    "ToolCallStatus",
    "ToolContext",
    "ToolDefinition",
    "ToolDeniedError",
    "ToolError",
    "ToolOutput",
    "ToolSearch",
    "ToolSource",
    "ToolSourceError",
    "ToolTimeoutError",
    "ToolloopError",
    "Transcript",
    "UnknownToolError",
    "UnsupportedContentError",
    "Usage",
    "UserError",
    "UserMessage",
    "UserPart",
    "__version__",
    "get_model",
    "load_agent",
    "open_store",
    "register_model_config",
    "register_provider",
    "tool",
]

SRC = Path(tooloop.__file__).resolve().parent.parent


def test_all_is_pinned() -> None:
    assert tooloop.__all__ == PUBLIC  # changing the public API is a decision: update this list


def test_every_public_name_is_importable() -> None:
    for name in PUBLIC:
        assert getattr(tooloop, name) is not None, name
    namespace: dict[str, object] = {}
    exec("from tooloop import *", namespace)
    assert set(PUBLIC) - {"__version__"} <= set(namespace)


def test_public_classes_and_functions_have_docstrings() -> None:
    for name in PUBLIC:
        value = getattr(tooloop, name)
        if isinstance(value, type) or callable(value):
            assert (getattr(value, "__doc__", None) or "").strip(), name


def _fresh(code: str) -> Any:
    """What ``code`` prints as JSON, run in a fresh interpreter on this tree's package."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(SRC)}
    )
    return json.loads(out.stdout)


# What ``import tooloop`` must leave out of a fresh process: every public name is imported on
# first use (the package's ``__getattr__``), so the bare import costs next to nothing.
HEAVY = (
    "asyncio",
    "pydantic",
    "pydantic_core",
    "openai",
    "anthropic",
    "google",
    "httpx",
    "httpx2",
    "msgspec",
    "orjson",
    "genai_prices",
    "docstring_parser",
    "typing",
    "dataclasses",
    "inspect",
    "logging",
    "socket",
    "ssl",
    "urllib",
    "email",
    "http",
    "importlib.metadata",
    "tooloop.agent",
    "tooloop.messages",
    "tooloop.models",
    "tooloop.errors",
)


def test_import_tooloop_loads_none_of_the_heavy_modules() -> None:
    code = (
        "import sys, json, tooloop\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy))))"
    )
    assert _fresh(code) == []


# What a plain run (``from tooloop import Agent, get_model``, an agent with a plain tool, a run
# that calls it) must leave out: what only sessions, context policies, tool search, structured
# output or cost reads need is imported when they are first used.
UNUSED_BY_A_PLAIN_RUN = (
    "tooloop.store",
    "tooloop.context",
    "tooloop.tools.search",
    "tooloop.loop.output",
    "genai_prices",
    "pydantic",
    "jsonschema",
)


def test_a_plain_run_with_a_plain_tool_loads_none_of_what_it_does_not_use() -> None:
    code = (
        "import sys, json\n"
        "from tooloop import Agent, get_model\n"
        "from tooloop.messages import ModelResponse, ToolCall\n"
        "from tooloop.testing import ScriptedModel\n"
        "def add(a: int, b: int) -> int:\n"
        "    'Add two numbers.'\n"
        "    return a + b\n"
        "call = ModelResponse(tool_calls=(ToolCall('c1', 'add', {'a': 2, 'b': 3}),))\n"
        "result = Agent(ScriptedModel([call, 'five']), tools=[add]).run_sync('2+3?')\n"
        "assert result.text == 'five' and result.usage.tool_calls == 1, result\n"
        f"unused = {UNUSED_BY_A_PLAIN_RUN!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if any(m == u or m.startswith(u + '.') for u in unused))))"
    )
    assert _fresh(code) == []


def test_every_public_name_resolves_in_a_fresh_process_and_lists_in_dir() -> None:
    code = (
        "import json, tooloop\n"
        "names = sorted(tooloop.__all__)\n"
        "missing = [n for n in names if n not in dir(tooloop)]\n"
        "unresolved = [n for n in names if getattr(tooloop, n, None) is None]\n"
        "print(json.dumps([missing, unresolved]))"
    )
    assert _fresh(code) == [[], []]


def test_a_lazy_name_is_the_object_its_module_defines() -> None:
    import tooloop.agent
    import tooloop.models.registry

    assert tooloop.Agent is tooloop.agent.Agent
    assert tooloop.get_model is tooloop.models.registry.get_model
    with pytest.raises(AttributeError, match="no attribute 'Agnet'"):
        _ = tooloop.Agnet  # type: ignore[attr-defined]


def test_type_checkers_see_the_names_the_package_resolves() -> None:
    """The ``if TYPE_CHECKING:`` imports (what mypy and IDEs read) and the lazy table agree."""
    tree = ast.parse((SRC / "tooloop" / "__init__.py").read_text())
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    typed = {
        alias.asname or alias.name: f"{'.' * node.level}{node.module}"
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == tooloop._LAZY
    assert set(tooloop.__all__) - {"__version__", "load_agent"} <= set(typed)


def test_the_subsystems_are_registered_without_importing_the_package_names() -> None:
    code = (
        "import json\n"
        "from tooloop.models.registry import get_model, registered_providers\n"
        "print(json.dumps([get_model('test:echo').name, 'test' in {p.name for p in registered_providers()}]))"
    )
    assert _fresh(code) == ["test:echo", True]


def test_the_version_is_the_one_the_package_metadata_gives() -> None:
    import importlib.metadata

    import tooloop

    assert tooloop.__version__ == importlib.metadata.version("tooloop")
