"""tooloop: the multi-turn LLM tool-calling loop.

Send the conversation to a model, run the tools it asks for, send the results back, and repeat
until it answers without tools, stopping for a reason you can act on.
"""

from .agent import Agent
from .errors import (
    ApprovalMismatchError,
    AuthenticationError,
    ConfigurationError,
    ContextLengthError,
    OutputValidationError,
    ProviderError,
    RateLimitError,
    RunError,
    RunTimeoutError,
    ToolloopError,
    UserError,
)
from .events import (
    ApprovalRequested,
    Event,
    MessageAdded,
    ModelRequestFinished,
    ModelRequestStarted,
    RunFinished,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from .loop.cancel import CancelToken
from .loop.control import Hooks, LoopControl, StepContext
from .loop.frontdoors import Conversation, EventStream
from .loop.limits import Limits
from .loop.result import ApprovalDecision, ApprovalRequest, RunResult
from .messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    StopReason,
    SystemMessage,
    ThinkingPart,
    ToolCall,
    ToolCallMessage,
    ToolCallStatus,
    Usage,
    UserMessage,
)
from .models.base import Model, ModelRequest, ModelSettings, ToolDefinition
from .models.registry import ModelConfig, get_model, register_model_config, register_provider
from .tools.tool import Tool, ToolContext, tool
from .transcript import Transcript

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "ApprovalDecision",
    "ApprovalMismatchError",
    "ApprovalRequest",
    "ApprovalRequested",
    "AssistantMessage",
    "AuthenticationError",
    "CancelToken",
    "ConfigurationError",
    "ContextLengthError",
    "Conversation",
    "Event",
    "EventStream",
    "Hooks",
    "Limits",
    "LoopControl",
    "Message",
    "MessageAdded",
    "Model",
    "ModelConfig",
    "ModelRequest",
    "ModelRequestFinished",
    "ModelRequestStarted",
    "ModelResponse",
    "ModelSettings",
    "OutputValidationError",
    "ProviderError",
    "RateLimitError",
    "RunError",
    "RunFinished",
    "RunResult",
    "RunTimeoutError",
    "StepContext",
    "StopReason",
    "SystemMessage",
    "TextDelta",
    "ThinkingDelta",
    "ThinkingPart",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallFinished",
    "ToolCallMessage",
    "ToolCallStarted",
    "ToolCallStatus",
    "ToolContext",
    "ToolDefinition",
    "ToolloopError",
    "Transcript",
    "Usage",
    "UserError",
    "UserMessage",
    "__version__",
    "get_model",
    "register_model_config",
    "register_provider",
    "tool",
]
