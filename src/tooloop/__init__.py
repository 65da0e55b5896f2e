"""tooloop: the multi-turn LLM tool-calling loop.

Send the conversation to a model, run the tools it asks for, send the results back, and repeat
until it answers without tools, stopping for a reason you can act on.
"""

import os

from ._version import __version__
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
    register_model_config_source,
    register_provider,
    register_provider_source,
)
from .store import SessionInfo, Store, open_store
from .tools.search import ToolSearch
from .tools.source import ToolSource
from .tools.tool import Tool, ToolContext, tool
from .transcript import Transcript

# The subsystems above the core plug into the model registry here, by import path (each imported
# on first use): the scripted "test:..." models, "@name" looking in tooloop.toml's [models], and
# installed packages' provider plugins (entry points, looked for when a provider is not known).
register_provider("test", "tooloop.testing:create_test_model", models=("echo", "tools"))
register_model_config_source("tooloop.config:model_config_from_file")
register_provider_source("tooloop.plugins:register_provider_plugins")


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
