"""tooloop: the multi-turn LLM tool-calling loop.

Send the conversation to a model, run the tools it asks for, send the results back, and repeat
until it answers without tools, stopping for a reason you can act on.
"""

from __future__ import annotations

from importlib import import_module

from ._version import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)

if TYPE_CHECKING:
    import os

    from .agent import Agent
    from .context import ContextPolicy
    from .errors import (
        ApprovalMismatchError,
        ArgumentTypeError,
        ArgumentValueError,
        AuthenticationError,
        BadRequestError,
        ConfigurationError,
        ConflictError,
        ContextBudgetError,
        ContextLengthError,
        CorruptDataError,
        ModelContractError,
        ModelResponseError,
        OutputValidationError,
        ProviderConnectionError,
        ProviderError,
        ProviderOverloadedError,
        ProviderTimeoutError,
        RateLimitError,
        RestoredToolError,
        RunError,
        RunTimeoutError,
        SessionBusyError,
        SessionNotFoundError,
        StoreError,
        StoreUnavailableError,
        ToolArgumentsError,
        ToolDeniedError,
        ToolError,
        ToolloopError,
        ToolSourceError,
        ToolTimeoutError,
        UnknownToolError,
        UnsupportedContentError,
        UserError,
    )
    from .events import (
        ApprovalDecided,
        ApprovalRequested,
        CacheBreak,
        CacheMiss,
        Event,
        MessageAdded,
        ModelRequestFinished,
        ModelRequestStarted,
        RunFinished,
        SubagentEvent,
        TextDelta,
        ThinkingDelta,
        ToolCallDelta,
        ToolCallFinished,
        ToolCallProgress,
        ToolCallStarted,
    )
    from .loop.cancel import CancelToken
    from .loop.control import Hooks, LoopControl, StepContext
    from .loop.frontdoors import Conversation, EventStream
    from .loop.limits import Limits
    from .loop.result import ApprovalDecision, ApprovalRequest, RunResult
    from .loop.syncstream import SyncEventStream
    from .messages import (
        AssistantMessage,
        AudioContent,
        ContentPart,
        DocumentContent,
        EmbeddedResource,
        ImageContent,
        Message,
        ModelResponse,
        ResourceLink,
        StopReason,
        SystemMessage,
        TextContent,
        ThinkingPart,
        ToolCall,
        ToolCallMessage,
        ToolCallStatus,
        ToolOutput,
        Usage,
        UserMessage,
        UserPart,
    )
    from .models.base import Model, ModelRequest, ModelSettings, ToolDefinition
    from .models.fallback import FallbackModel
    from .models.registry import (
        ModelConfig,
        get_model,
        register_model_config,
        register_provider,
    )
    from .models.registry import (
        register_model_config_source as register_model_config_source,
    )
    from .models.registry import (
        register_provider_source as register_provider_source,
    )
    from .store import SessionInfo, Store, open_store
    from .tools.search import ToolSearch
    from .tools.source import ToolSource
    from .tools.tool import Tool, ToolContext, tool
    from .transcript import Transcript

# ``import tooloop`` loads only this module and the version: every other public name is imported
# from its module on first access (PEP 562), so a program pays for what it uses (no asyncio, no
# pydantic, no SDK at import). Type checkers and IDEs read the imports above.
_LAZY: dict[str, str] = {
    "Agent": ".agent",
    "ContextPolicy": ".context",
    "ApprovalMismatchError": ".errors",
    "ArgumentTypeError": ".errors",
    "ArgumentValueError": ".errors",
    "AuthenticationError": ".errors",
    "BadRequestError": ".errors",
    "ConfigurationError": ".errors",
    "ConflictError": ".errors",
    "ContextBudgetError": ".errors",
    "ContextLengthError": ".errors",
    "CorruptDataError": ".errors",
    "ModelContractError": ".errors",
    "ModelResponseError": ".errors",
    "OutputValidationError": ".errors",
    "ProviderConnectionError": ".errors",
    "ProviderError": ".errors",
    "ProviderOverloadedError": ".errors",
    "ProviderTimeoutError": ".errors",
    "RateLimitError": ".errors",
    "RestoredToolError": ".errors",
    "RunError": ".errors",
    "RunTimeoutError": ".errors",
    "SessionBusyError": ".errors",
    "SessionNotFoundError": ".errors",
    "StoreError": ".errors",
    "StoreUnavailableError": ".errors",
    "ToolArgumentsError": ".errors",
    "ToolDeniedError": ".errors",
    "ToolError": ".errors",
    "ToolSourceError": ".errors",
    "ToolTimeoutError": ".errors",
    "ToolloopError": ".errors",
    "UnknownToolError": ".errors",
    "UnsupportedContentError": ".errors",
    "UserError": ".errors",
    "ApprovalDecided": ".events",
    "ApprovalRequested": ".events",
    "CacheBreak": ".events",
    "CacheMiss": ".events",
    "Event": ".events",
    "MessageAdded": ".events",
    "ModelRequestFinished": ".events",
    "ModelRequestStarted": ".events",
    "RunFinished": ".events",
    "SubagentEvent": ".events",
    "TextDelta": ".events",
    "ThinkingDelta": ".events",
    "ToolCallDelta": ".events",
    "ToolCallFinished": ".events",
    "ToolCallProgress": ".events",
    "ToolCallStarted": ".events",
    "CancelToken": ".loop.cancel",
    "Hooks": ".loop.control",
    "LoopControl": ".loop.control",
    "StepContext": ".loop.control",
    "Conversation": ".loop.frontdoors",
    "EventStream": ".loop.frontdoors",
    "Limits": ".loop.limits",
    "ApprovalDecision": ".loop.result",
    "ApprovalRequest": ".loop.result",
    "RunResult": ".loop.result",
    "SyncEventStream": ".loop.syncstream",
    "AssistantMessage": ".messages",
    "AudioContent": ".messages",
    "ContentPart": ".messages",
    "DocumentContent": ".messages",
    "EmbeddedResource": ".messages",
    "ImageContent": ".messages",
    "Message": ".messages",
    "ModelResponse": ".messages",
    "ResourceLink": ".messages",
    "StopReason": ".messages",
    "SystemMessage": ".messages",
    "TextContent": ".messages",
    "ThinkingPart": ".messages",
    "ToolCall": ".messages",
    "ToolCallMessage": ".messages",
    "ToolCallStatus": ".messages",
    "ToolOutput": ".messages",
    "Usage": ".messages",
    "UserMessage": ".messages",
    "UserPart": ".messages",
    "Model": ".models.base",
    "ModelRequest": ".models.base",
    "ModelSettings": ".models.base",
    "ToolDefinition": ".models.base",
    "FallbackModel": ".models.fallback",
    "ModelConfig": ".models.registry",
    "get_model": ".models.registry",
    "register_model_config": ".models.registry",
    "register_model_config_source": ".models.registry",
    "register_provider": ".models.registry",
    "register_provider_source": ".models.registry",
    "SessionInfo": ".store",
    "Store": ".store",
    "open_store": ".store",
    "ToolSearch": ".tools.search",
    "ToolSource": ".tools.source",
    "Tool": ".tools.tool",
    "ToolContext": ".tools.tool",
    "tool": ".tools.tool",
    "Transcript": ".transcript",
}
"""Public name -> the module (relative to this package) that defines it."""

if not TYPE_CHECKING:  # hidden from type checkers, which would otherwise accept any attribute

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(import_module(module, __name__), name)
        globals()[name] = value  # later accesses are plain attribute reads
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def _register_subsystems() -> None:
    """Plug the subsystems above the core into the model registry, by import path (each imported on
    first use): the scripted "test:..." models, "@name" looking in tooloop.toml's [models], and
    installed packages' provider plugins (entry points, looked for when a provider is not known).
    Called by :mod:`tooloop.models.registry` when it is first imported."""
    from .models import registry

    registry.register_provider("test", "tooloop.testing:create_test_model", models=("echo", "tools"))
    registry.register_model_config_source("tooloop.config:model_config_from_file")
    registry.register_provider_source("tooloop.plugins:register_provider_plugins")


def load_agent(name: str, *, path: str | os.PathLike[str] | None = None) -> Agent:
    """The agent ``[agents.NAME]`` of ``tooloop.toml`` (found in the project folder, then the user's
    configuration folder, unless ``path`` names the file). See :mod:`tooloop.config`."""
    from .config import load_agent as load

    return load(name, path=path)


__all__ = [
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
