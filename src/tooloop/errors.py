"""The whole exception tree of tooloop, split by who has to act.

::

    ToolloopError                      base of everything tooloop raises
    ├── UserError                      the developer must fix the code or configuration
    │   ├── ConfigurationError         unknown model string, bad setting, missing API key
    │   │   ├── ArgumentTypeError      a value of the wrong type (also a ``TypeError``)
    │   │   ├── ArgumentValueError     a value out of range or malformed (also a ``ValueError``)
    │   │   └── UnsupportedContentError  the model cannot take an attachment (audio, a document type...)
    │   ├── ModelContractError         a custom ``Model`` returned something the seam forbids
    │   └── ApprovalMismatchError      a decision does not match the call it claims to approve
    ├── RunError                       the run could not finish; carries ``transcript`` and ``usage``
    │   ├── RunTimeoutError            ``Limits.timeout`` elapsed
    │   ├── OutputValidationError      structured output still invalid after the allowed retries
    │   └── ContextBudgetError         the conversation cannot be made to fit the context window
    ├── ProviderError                  the model provider failed; ``status_code``, ``retryable``
    │   ├── AuthenticationError        401/403: never retried
    │   ├── RateLimitError             429 (``retry_after`` seconds when the provider said)
    │   ├── ProviderOverloadedError    5xx / overloaded: retried with backoff
    │   ├── ContextLengthError         the request does not fit the model's context window
    │   ├── BadRequestError            400 the provider rejected
    │   ├── ProviderTimeoutError       the request timed out
    │   ├── ProviderConnectionError    connection refused, reset, or a stream cut short
    │   └── ModelResponseError         the provider answered something tooloop cannot read
    ├── ToolError                      raised inside tool execution (sent to the model, not raised)
    │   ├── UnknownToolError           the model called a tool the agent does not have
    │   ├── ToolArgumentsError         arguments are not valid JSON or fail validation
    │   ├── ToolTimeoutError           the tool ran longer than its timeout
    │   ├── ToolDeniedError            denied by an allow/deny list or an approver
    │   └── RestoredToolError          an error read back from a stored transcript
    ├── ToolSourceError                a tool source (an MCP server) failed to start, or stopped
    └── StoreError                     persistence failed
        ├── SessionNotFoundError
        ├── ConflictError              another worker owns the session (never retried)
        │   └── SessionBusyError       a live worker holds the session's lease
        ├── StoreUnavailableError      the database stayed unreachable (retryable: nothing was lost)
        └── CorruptDataError           stored data cannot be read (names session and position)

Values given to tooloop are checked where they are given (``Agent(...)``, ``Limits(...)``,
``@tool``, the arguments of ``run()``): a wrong one raises :class:`ArgumentTypeError` or
:class:`ArgumentValueError` there, naming the parameter and how to fix it.

Every error raised out of a run carries ``transcript`` (everything up to the last complete step,
valid to send to any provider), ``usage``, and ``partial_text`` when a streamed answer was cut
off, so nothing the user paid for is lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .messages import Usage
    from .transcript import Transcript

__all__ = [
    "ApprovalMismatchError",
    "ArgumentTypeError",
    "ArgumentValueError",
    "AuthenticationError",
    "BadRequestError",
    "ConfigurationError",
    "ConflictError",
    "ContextBudgetError",
    "ContextLengthError",
    "CorruptDataError",
    "ModelContractError",
    "ModelResponseError",
    "OutputValidationError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderOverloadedError",
    "ProviderTimeoutError",
    "RateLimitError",
    "RestoredToolError",
    "RunError",
    "RunTimeoutError",
    "SessionBusyError",
    "SessionNotFoundError",
    "StoreError",
    "StoreUnavailableError",
    "ToolArgumentsError",
    "ToolDeniedError",
    "ToolError",
    "ToolSourceError",
    "ToolTimeoutError",
    "ToolloopError",
    "UnknownToolError",
    "UnsupportedContentError",
    "UserError",
]


class ToolloopError(Exception):
    """Base class of every error tooloop raises.

    ``transcript`` and ``usage`` are filled in when the error leaves a run, so the messages and
    tokens of the run so far are never lost.
    """

    transcript: Transcript | None = None
    usage: Usage | None = None
    partial_text: str | None = None
    """Text a streaming response had produced when the run failed (not part of the transcript)."""


class UserError(ToolloopError):
    """A mistake in how tooloop is used: the developer has to change code or configuration."""


class ConfigurationError(UserError):
    """A setting is wrong or missing: unknown model string, missing API key, invalid option."""


class ArgumentTypeError(ConfigurationError, TypeError):
    """A value given to tooloop has the wrong type; the message names the parameter and the fix."""


class ArgumentValueError(ConfigurationError, ValueError):
    """A value given to tooloop is out of range or malformed; the message names the parameter and the fix."""


class UnsupportedContentError(ConfigurationError):
    """A user message holds content the model cannot take (audio for a model without audio input,
    an image type the provider refuses...); raised before anything is sent."""


class ModelContractError(UserError, TypeError):
    """A :class:`~tooloop.models.Model` broke its contract, e.g. ``respond`` did not return a
    ``ModelResponse``, or a ``ToolCall`` has arguments that are neither a dict nor JSON text."""


class ApprovalMismatchError(UserError):
    """An approval decision does not match the tool call (id, name or exact arguments) it names."""


class RunError(ToolloopError):
    """The run could not finish. ``transcript`` holds everything up to the failure."""

    def __init__(self, message: str, *, transcript: Transcript | None = None, usage: Usage | None = None):
        super().__init__(message)
        self.transcript = transcript
        self.usage = usage


class RunTimeoutError(RunError):
    """``Limits.timeout`` elapsed before the run finished."""


class OutputValidationError(RunError):
    """The final answer did not validate against ``output_type`` after the allowed retries."""


class ContextBudgetError(RunError):
    """The conversation cannot be pruned to fit the model's context window."""


class ProviderError(ToolloopError):
    """The model provider failed. ``retryable`` says whether trying again may help."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        provider: str | None = None,
        body: Any = None,
    ):
        super().__init__(message)
        self.status_code = status_code
        self.provider = provider
        self.body = body


class AuthenticationError(ProviderError):
    """The provider refused the credentials (401/403). Never retried."""


class RateLimitError(ProviderError):
    """The provider is rate limiting (429). ``retry_after`` is in seconds when the provider said."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ProviderOverloadedError(ProviderError):
    """The provider is overloaded or failed internally (5xx). Retried with backoff."""

    retryable = True


class ContextLengthError(ProviderError):
    """The request does not fit the model's context window."""


class BadRequestError(ProviderError):
    """The provider rejected the request as invalid (400, 404, 422)."""


class ProviderTimeoutError(ProviderError):
    """The request to the provider timed out."""

    retryable = True


class ProviderConnectionError(ProviderError):
    """The connection failed or a streamed response was cut short."""

    retryable = True


class ModelResponseError(ProviderError):
    """The provider answered with something tooloop cannot interpret."""


class ToolError(ToolloopError):
    """An error from running a tool call. The loop sends it to the model as the call's result."""


class UnknownToolError(ToolError):
    """The model called a tool the agent does not have."""


class ToolArgumentsError(ToolError):
    """The tool call's arguments are not valid JSON or fail the tool's parameter validation."""


class ToolTimeoutError(ToolError):
    """The tool ran longer than its timeout."""


class ToolDeniedError(ToolError):
    """The call was refused by an allow/deny list or by an approver."""


class RestoredToolError(ToolError):
    """A tool error read back from a stored transcript: the original type name and text."""

    def __init__(self, type_name: str, message: str):
        super().__init__(message)
        self.type_name = type_name

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.type_name, str(self)))


class ToolSourceError(ToolloopError):
    """A tool source (an MCP server) could not start, or stopped while in use.

    Raised out of a run when the source's tools cannot be listed; a call in flight when the
    source stops gets it as its error result instead, and the source restarts on the next call.
    """


class StoreError(ToolloopError):
    """Persistence failed. ``retryable`` says whether the same run may succeed when tried again."""

    retryable: bool = False


class SessionNotFoundError(StoreError, KeyError):
    """No session with that id exists in the store."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "session not found"


class ConflictError(StoreError):
    """Another worker owns this session: it changed the session since this run read it (or holds
    its lease). Nothing was written. Never retry the same run: the owner is finishing the turn;
    load the session again to see what it did."""


class SessionBusyError(ConflictError):
    """A live worker holds the session's lease; ``owner`` and ``expires_at`` say who and until when."""

    owner: str | None = None
    expires_at: float | None = None


class StoreUnavailableError(StoreError):
    """The database could not be reached (connection lost, server restarting, no free pooled
    connection) or kept refusing a transaction for a race it lost, for longer than the store keeps
    retrying. A write that failed this way was not applied, or was applied exactly once; run the
    turn again (a durable turn is retried) once the database is back."""

    retryable = True


class CorruptDataError(StoreError):
    """Stored data cannot be read. The message names the session and the position."""
