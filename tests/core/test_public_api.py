"""The public API: what ``import tooloop`` offers, and what it must not drag in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


def test_import_tooloop_imports_no_provider_sdk_and_no_pydantic() -> None:
    code = (
        "import sys, json, tooloop\n"
        "heavy = ('openai', 'anthropic', 'google.genai', 'pydantic', 'httpx')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith('google.genai'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(SRC)}
    )
    assert json.loads(out.stdout) == []


def test_the_version_is_the_one_the_package_metadata_gives() -> None:
    import importlib.metadata

    import tooloop

    assert tooloop.__version__ == importlib.metadata.version("tooloop")
