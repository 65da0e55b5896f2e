"""Token capture: asking an inference server for the exact tokens, and reading them back.

vLLM (``return_token_ids``) answers with the prompt's ids at the top of the completion
(``prompt_token_ids``) and the sampled ids on the choice (``token_ids``); streamed, the prompt
ids come on the first chunk and every chunk's choice carries the ids of its own delta. SGLang
(``return_prompt_token_ids`` and ``return_token_ids``) puts both on the choice, and with
``return_meta_info`` adds ``meta_info.output_token_logprobs`` (``[logprob, id, ...]`` per token);
it refuses prompt ids on a stream, so captured SGLang requests are plain. The sampled tokens'
log-probabilities are the standard ``choices[].logprobs.content[].logprob``.

What does not add up (ids of another length than the logprobs or the usage says, no ids at all)
is kept with a ``problem`` that says so: a trajectory never trains on it.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from ...errors import ConfigurationError
from ...messages import Message, ModelResponse, Tokens, response_messages
from .chunks import Chunk

__all__ = ["TOKEN_SERVERS", "StreamTokens", "TokenServer", "capture_fields", "compacted", "read_tokens", "with_tokens"]

TokenServer = Literal["vllm", "sglang"]
TOKEN_SERVERS: tuple[TokenServer, ...] = ("vllm", "sglang")


def check_token_server(value: object) -> TokenServer:
    """``value`` when it names a server whose token fields tooloop speaks."""
    if value == "vllm":
        return "vllm"
    if value == "sglang":
        return "sglang"
    raise ConfigurationError(f"token_server must be one of {TOKEN_SERVERS}, not {value!r}")


def capture_fields(server: TokenServer) -> dict[str, Any]:
    """The request fields that ask ``server`` for prompt ids, sampled ids and their logprobs."""
    if server == "sglang":
        return {"logprobs": True, "return_token_ids": True, "return_prompt_token_ids": True, "return_meta_info": True}
    return {"logprobs": True, "return_token_ids": True}


def with_tokens(response: ModelResponse, data: Mapping[str, Any]) -> ModelResponse:
    """``response`` with the tokens of the plain completion ``data`` it was read from."""
    return replace(response, tokens=read_tokens(data, response))


def compacted(response: ModelResponse, history: Sequence[Message]) -> ModelResponse:
    """``response`` with its prompt ids kept as those after the last earlier response's prompt
    and completion ids in ``history``, when they continue them (:meth:`Tokens.continuing`): a
    conversation then holds each token once, not every turn's whole prompt again."""
    if response.tokens is None:
        return response
    previous = None
    for _, message in response_messages(history):
        previous = message.tokens if message.tokens is not None else previous
    tokens = response.tokens.continuing(previous)
    return response if tokens is response.tokens else replace(response, tokens=tokens)


def read_tokens(data: Mapping[str, Any], response: ModelResponse) -> Tokens:
    """The tokens of a plain Chat Completions body (vLLM's or SGLang's shapes)."""
    choices = data.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], Mapping) else {}
    prompt = data.get("prompt_token_ids")
    if prompt is None:
        prompt = choice.get("prompt_token_ids")
    completion = choice.get("token_ids")
    logprobs = _content_logprobs(choice.get("logprobs"))
    meta = choice.get("meta_info")
    if isinstance(meta, Mapping) and (completion is None or logprobs is None):
        meta_ids, meta_logprobs = _meta_tokens(meta.get("output_token_logprobs"))
        completion = meta_ids if completion is None else completion
        logprobs = meta_logprobs if logprobs is None else logprobs
    return checked(prompt, completion, logprobs, response)


def _content_logprobs(value: Any) -> list[float | None] | None:
    if not isinstance(value, Mapping):
        return None
    content = value.get("content")
    if not isinstance(content, list):
        return None
    try:
        return [item["logprob"] for item in content]
    except (TypeError, KeyError):
        return [item.get("logprob") if isinstance(item, Mapping) else None for item in content]


def _meta_tokens(rows: Any) -> tuple[list[int] | None, list[float | None] | None]:
    """SGLang's ``output_token_logprobs``: ``[logprob, token_id, text?]`` per sampled token."""
    if not isinstance(rows, list):
        return None, None
    ids: list[int] = []
    logprobs: list[float | None] = []
    for row in rows:
        if not isinstance(row, list | tuple) or len(row) < 2:
            return None, None
        logprobs.append(row[0])
        ids.append(row[1])
    return ids, logprobs


def checked(prompt: Any, completion: Any, logprobs: Any, response: ModelResponse) -> Tokens:
    """Tokens from what a server sent, with a ``problem`` wherever the pieces do not add up."""
    if completion is None and prompt is None:
        return Tokens(problem="the server sent no token ids (does it support return_token_ids?)")
    try:
        tokens = Tokens.of(prompt or (), completion or ())
    except ValueError as exc:
        return Tokens(problem=f"the server sent unreadable token ids: {exc}")
    problem = _mismatch(tokens, prompt, completion, response)
    if logprobs is not None:
        count = len(completion or ())
        if len(logprobs) != count:
            problem = problem or f"the server sent {len(logprobs)} logprobs for {count} completion ids"
        else:
            packed, trouble = _packed(logprobs)
            tokens = replace(tokens, logprobs=packed)
            problem = problem or trouble
    return replace(tokens, problem=problem) if problem else tokens


def _packed(logprobs: Any) -> tuple[bytes, str | None]:
    """The logprobs as 64-bit floats (NaN for none), and what was wrong with them."""
    try:
        return array("d", logprobs).tobytes(), None  # the usual case: every one a number, in one C call
    except TypeError:
        pass
    try:
        return Tokens.of((), (0,) * len(logprobs), _numbers(logprobs)).logprobs, None
    except ValueError as exc:
        return b"", f"the server sent unreadable logprobs: {exc}"


def _numbers(values: Iterable[Any]) -> list[float | None]:
    out: list[float | None] = []
    for value in values:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            out.append(None)
        else:
            out.append(value)
    return out


def _mismatch(tokens: Tokens, prompt: Any, completion: Any, response: ModelResponse) -> str | None:
    if prompt is None:
        return "the server sent no prompt token ids"
    if completion is None:
        return "the server sent no completion token ids"
    usage = response.usage
    sampled = len(tokens.completion) // 4
    if usage.output_tokens and usage.output_tokens != sampled:
        return f"the server sent {sampled} completion ids but counted {usage.output_tokens} completion tokens"
    seen = len(tokens.prompt) // 4
    if usage.input_tokens and usage.input_tokens != seen:
        return f"the server sent {seen} prompt ids but counted {usage.input_tokens} prompt tokens"
    return None


class StreamTokens:
    """Gathers the token fields of streamed chunks (vLLM: prompt ids on the first, each delta's ids)."""

    __slots__ = ("_ids", "_logprobs", "_prompt", "_seen_ids", "_seen_logprobs")

    def __init__(self) -> None:
        self._prompt: list[int] | None = None
        self._ids = array("i")
        self._logprobs: list[float | None] = []
        self._seen_ids = False
        self._seen_logprobs = False

    def take(self, chunks: Iterable[Chunk]) -> None:
        """Read the token fields of ``chunks``, in order."""
        for chunk in chunks:
            if chunk.prompt_token_ids is not None and self._prompt is None:
                self._prompt = chunk.prompt_token_ids
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            if choice.token_ids is not None:
                self._seen_ids = True
                try:
                    self._ids.extend(choice.token_ids)
                except (OverflowError, TypeError):
                    self._ids.append(-1)  # refused below as an id out of range
            logprobs = choice.logprobs
            if logprobs is not None and logprobs.content is not None:
                self._seen_logprobs = True
                self._logprobs.extend(item.logprob for item in logprobs.content)

    def tokens(self, response: ModelResponse) -> Tokens:
        """The tokens of the whole stream."""
        completion = self._ids if self._seen_ids else None
        logprobs = self._logprobs if self._seen_logprobs else None
        return checked(self._prompt, completion, logprobs, response)
