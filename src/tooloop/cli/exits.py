"""Exit codes a script can rely on, and the short error messages that name the fix."""

from __future__ import annotations

import enum
from typing import NoReturn

from ..errors import (
    AuthenticationError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
    RunTimeoutError,
    StoreError,
    ToolloopError,
    UserError,
)
from ..messages import StopReason

__all__ = ["CliError", "ExitCode", "describe", "exit_code_for_error", "exit_code_for_stop", "fail"]


class ExitCode(enum.IntEnum):
    """What the ``tooloop`` command's exit status means."""

    OK = 0
    """The model answered."""
    ERROR = 1
    """The run failed: the provider, the network, a store, a tool source."""
    USAGE = 2
    """The command was given wrong options or the configuration is missing (a model, a key)."""
    LIMIT = 3
    """A limit stopped the run (turns, tokens, cost, wall time) or a hook stopped it."""
    APPROVAL = 4
    """Tool calls wait for a decision that nobody was there to give."""
    REFUSED = 5
    """The model refused to answer."""
    CANCELLED = 130
    """Cancelled (Ctrl-C); 128 + SIGINT, as shells report it."""


_STOP_CODES = {
    StopReason.END_TURN: ExitCode.OK,
    StopReason.MAX_TOKENS: ExitCode.LIMIT,
    StopReason.MAX_TURN_REQUESTS: ExitCode.LIMIT,
    StopReason.TOKEN_BUDGET: ExitCode.LIMIT,
    StopReason.STOPPED_BY_HOOK: ExitCode.LIMIT,
    StopReason.COST_LIMIT: ExitCode.LIMIT,
    StopReason.REPEATED_CALL: ExitCode.LIMIT,
    StopReason.REPEATED_ERROR: ExitCode.LIMIT,
    StopReason.EMPTY_RESPONSE: ExitCode.LIMIT,
    StopReason.APPROVAL_REQUIRED: ExitCode.APPROVAL,
    StopReason.REFUSAL: ExitCode.REFUSED,
    StopReason.CANCELLED: ExitCode.CANCELLED,
    StopReason.ERROR: ExitCode.ERROR,
}


def exit_code_for_stop(reason: StopReason) -> ExitCode:
    """The exit code of a run that stopped for ``reason``."""
    return _STOP_CODES.get(reason, ExitCode.ERROR)


class CliError(Exception):
    """A problem the person at the command line fixes; printed as one line, no traceback."""

    def __init__(self, message: str, code: ExitCode = ExitCode.USAGE):
        super().__init__(message)
        self.code = code


def fail(message: str, code: ExitCode = ExitCode.USAGE) -> NoReturn:
    """Stop the command with ``message`` on stderr and ``code`` as exit status."""
    raise CliError(message, code)


def exit_code_for_error(error: BaseException) -> ExitCode:
    """The exit code for an error that ended a command."""
    if isinstance(error, CliError):
        return error.code
    if isinstance(error, UserError):
        return ExitCode.USAGE
    if isinstance(error, RunTimeoutError):
        return ExitCode.LIMIT
    return ExitCode.ERROR


def _hint(error: BaseException) -> str | None:
    if isinstance(error, AuthenticationError):
        return "the provider refused the key: check the key's environment variable (see 'tooloop models')"
    if isinstance(error, RateLimitError):
        return "the provider is rate limiting: wait a little, or use another model with --model"
    if isinstance(error, ProviderConnectionError):
        return "is the server running? Check the base URL (OPENAI_BASE_URL, OLLAMA_HOST...) and the network"
    if isinstance(error, RunTimeoutError):
        return "give the run more time with --timeout SECONDS"
    if isinstance(error, StoreError):
        return "check --store / TOOLOOP_STORE"
    return None


def describe(error: BaseException) -> str:
    """One or two lines: what went wrong and, when there is one, the fix."""
    if isinstance(error, ToolloopError | CliError):
        message = str(error) or type(error).__name__
    else:
        message = f"{type(error).__name__}: {error}"
    if isinstance(error, StoreError):  # a driver's message may span lines: one line says it
        message = " ".join(line.strip() for line in message.splitlines() if line.strip())
    if isinstance(error, ProviderError) and error.provider and error.provider not in message:
        message = f"{error.provider}: {message}"
    hint = _hint(error)
    return f"{message}\n  hint: {hint}" if hint else message
