"""A response without tool calls: a final answer, a refusal, a cut-off, or structured output to check."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ..errors import OutputValidationError
from ..messages import AssistantMessage, ModelResponse, StopReason, UserMessage
from .record import Recorder, request_usage

if TYPE_CHECKING:
    from .output import OutputSpec

__all__ = ["Answers", "answer_message"]


def answer_message(response: ModelResponse) -> AssistantMessage:
    """The transcript's record of a response without tool calls."""
    return AssistantMessage(
        response.text,
        thinking=response.thinking,
        refusal=response.refusal,
        stop_reason=response.stop_reason,
        model=response.model,
        provider_data=response.provider_data,
        response_id=response.response_id,
        stop_sequence=response.stop_sequence,
        usage=request_usage(response.usage),
        tokens=response.tokens,
    )


class Answers:
    """Records the model's answers and holds the run's validated structured output."""

    __slots__ = ("_record", "_retried", "output", "retries", "spec")

    def __init__(self, spec: OutputSpec | None, retries: int, record: Recorder):
        self.spec = spec
        self.retries = retries
        """How many times a malformed structured answer may be sent back to be fixed."""
        self.output: Any = None
        self._record = record
        self._retried = 0

    async def take(self, response: ModelResponse, *, may_retry: bool = True) -> StopReason | None:
        """Record ``response``; the reason the run stops, or None when it goes on.

        A paused turn goes on; a refusal or a cut-off stops; structured output that does not
        validate is sent back with the error while retries last, then raises
        :class:`~tooloop.errors.OutputValidationError`. When the run is already stopping (a hook
        said so, ``may_retry=False``), an answer that does not validate is kept without a retry
        prompt and ``output`` stays None.
        """
        reason = response.stop_reason
        if reason is StopReason.PAUSE_TURN:
            await self._record.add(answer_message(response))
            return None
        if response.refusal is not None or reason in (StopReason.MAX_TOKENS, StopReason.REFUSAL):
            await self._record.add(answer_message(response))
            return StopReason.REFUSAL if response.refusal is not None else reason
        if self.spec is None:
            await self._record.add(answer_message(response))
            return StopReason.END_TURN
        if not may_retry:
            await self._record.add(answer_message(response))
            with contextlib.suppress(ValueError):
                self.output = self.spec.validate(response.text)
            return None
        return await self._check(self.spec, response)

    async def _check(self, spec: OutputSpec, response: ModelResponse) -> StopReason | None:
        answer = answer_message(response)
        try:
            self.output = spec.validate(response.text)
        except ValueError as exc:
            if self._retried >= self.retries:
                await self._record.add(answer)
                raise OutputValidationError(
                    f"the final answer did not match {spec.schema.name} after {self._retried + 1} attempts: {exc}"
                ) from None
            self._retried += 1
            await self._record.add(answer, UserMessage(spec.retry_prompt(str(exc))))
            return None
        await self._record.add(answer)
        return StopReason.END_TURN

    async def take_final(self, response: ModelResponse) -> None:
        """Record the answer asked for after a limit stopped the run; no turn is left to fix it."""
        await self._record.add(answer_message(response))
        spec = self.spec
        if spec is not None:
            try:
                self.output = spec.validate(response.text)
            except ValueError as exc:
                raise OutputValidationError(f"the final answer did not match {spec.schema.name}: {exc}") from None
