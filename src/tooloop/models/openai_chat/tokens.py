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
import struct
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import msgspec

from ...errors import ConfigurationError
from ...messages import Message, ModelResponse, Tokens, as_read, ids_bytes, response_messages, settled
from .chunks import Chunk
from .response import parse_completion

__all__ = [
    "TOKEN_SERVERS",
    "PromptHeads",
    "StreamTokens",
    "TokenServer",
    "capture_fields",
    "compacted",
    "kept",
    "last_tokens",
    "read_captured",
    "read_tokens",
    "with_tokens",
]

TokenServer = Literal["vllm", "sglang"]
TOKEN_SERVERS: tuple[TokenServer, ...] = ("vllm", "sglang")


def check_token_server(value: object) -> TokenServer:
    """``value`` when it names a server whose token fields tooloop speaks."""
    if value == "vllm":
        return "vllm"
    if value == "sglang":
        return "sglang"
    raise ConfigurationError(f"token_server must be one of {TOKEN_SERVERS}, not {value!r}")


def capture_fields(server: TokenServer, *, logprobs: bool = True) -> dict[str, Any]:
    """The request fields that ask ``server`` for prompt ids, sampled ids and (unless ``logprobs``
    is false) their logprobs."""
    if server == "sglang":
        fields = {"return_token_ids": True, "return_prompt_token_ids": True, "return_meta_info": True}
    else:
        fields = {"return_token_ids": True}
    return {"logprobs": True, **fields} if logprobs else fields


def with_tokens(response: ModelResponse, data: Mapping[str, Any]) -> ModelResponse:
    """``response`` with the tokens of the plain completion ``data`` it was read from."""
    return replace(response, tokens=read_tokens(data, response))


def last_tokens(history: Sequence[Message]) -> Tokens | None:
    """The tokens of the last response in ``history`` that has some."""
    previous = None
    for _, message in response_messages(history):
        previous = message.tokens if message.tokens is not None else previous
    return previous


def compacted(response: ModelResponse, previous: Tokens | None, heads: PromptHeads | None = None) -> ModelResponse:
    """``response`` with its prompt ids kept as those after ``previous``' prompt and completion
    ids (the last earlier response's, :func:`last_tokens`) when they continue them
    (:meth:`Tokens.continuing`), else as those after a start of prompt ``heads`` shares: a
    conversation then holds each token once, not every turn's whole prompt again."""
    if response.tokens is None:
        return response
    tokens = kept(response.tokens, previous, heads)
    return response if tokens is response.tokens else replace(response, tokens=tokens)


def kept(tokens: Tokens, previous: Tokens | None, heads: PromptHeads | None) -> Tokens:
    """``tokens`` as :func:`compacted` keeps them (unchanged when they are kept so already)."""
    tokens = tokens.continuing(previous)
    if heads is not None and tokens.extends is None:
        tokens = heads.share(tokens)
    return settled(tokens)


_SHARED_MIN = 64 * 4
"""Bytes (64 ids): a shorter common start is not worth a head of its own."""
_KEY_SIZE = 32 * 4
_MAX_KEYS = 64
_MAX_HEADS = 8


class PromptHeads:
    """The starts of first prompts that the conversations of one model share, each kept once.

    A batch's conversations mostly begin alike: the system prompt and the tools' definitions,
    and in a GRPO-style group the whole first prompt. A response whose prompt continues no
    earlier response keeps only the ids after the longest such start (a :class:`Tokens` with a
    prompt and no completion, as its ``extends``); :attr:`Tokens.whole_prompt` puts them
    together again. Prompts are grouped by their first 32 ids; for each group the last prompt
    seen and up to 8 heads (nested starts of it) are remembered, for up to 64 groups. Several
    threads may share one: a race loses a chance to share, never an id.
    """

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[bytes, tuple[bytes, tuple[Tokens, ...]]] = {}

    def share(self, tokens: Tokens) -> Tokens:
        """``tokens`` (whose prompt is whole: no ``extends``) with their prompt after a shared head."""
        prompt = tokens.prompt
        if tokens.extends is not None or len(prompt) < _SHARED_MIN or tokens.problem is not None:
            return tokens
        key = prompt[:_KEY_SIZE]
        last, heads = self._seen.get(key, (b"", ()))
        size = _common_start(prompt, last)
        heads = tuple(head for head in heads if head.prompt_length * 4 <= size)  # those still starts of both
        if size >= _SHARED_MIN and len(heads) < _MAX_HEADS and (not heads or heads[-1].prompt_length * 4 < size):
            heads += (as_read(prompt[:size], b"", b"", None),)  # held as they are: read by every continuing check
        if len(self._seen) >= _MAX_KEYS and key not in self._seen:
            self._seen.clear()
        self._seen[key] = (prompt, heads)
        if not heads:
            return tokens
        head = heads[-1]
        return tokens.after(prompt[head.prompt_length * 4 :], head)


def _common_start(a: bytes, b: bytes) -> int:
    """The length in bytes of the longest run of whole ids that ``a`` and ``b`` both start with."""
    low, high = 0, min(len(a), len(b)) // 4
    while low < high:  # a few comparisons in C, however long the prompts
        middle = (low + high + 1) // 2
        if a.startswith(b[: middle * 4]):
            low = middle
        else:
            high = middle - 1
    return low * 4


def read_tokens(data: Mapping[str, Any], response: ModelResponse) -> Tokens:
    """The tokens of a plain Chat Completions body (vLLM's or SGLang's shapes)."""
    choices = data.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], Mapping) else {}
    prompt = data.get("prompt_token_ids")
    if prompt is None:
        prompt = choice.get("prompt_token_ids")
    return _tokens(prompt, choice.get("token_ids"), _content_logprobs(choice.get("logprobs")), choice, response)


def _tokens(prompt: Any, completion: Any, logprobs: Any, choice: Mapping[str, Any], response: ModelResponse) -> Tokens:
    meta = choice.get("meta_info")
    if isinstance(meta, Mapping) and (completion is None or logprobs is None):
        meta_ids, meta_logprobs = _meta_tokens(meta.get("output_token_logprobs"))
        completion = meta_ids if completion is None else completion
        logprobs = meta_logprobs if logprobs is None else logprobs
    return checked(prompt, completion, logprobs, response)


class _Logprob(msgspec.Struct, gc=False):
    logprob: float | None = None


class _Logprobs(msgspec.Struct, gc=False):
    content: list[_Logprob] | None = None


class _Choice(msgspec.Struct, gc=False):
    message: Any = None
    finish_reason: Any = None
    stop_reason: Any = None
    token_ids: list[int] | None = None
    prompt_token_ids: list[int] | None = None
    logprobs: _Logprobs | None = None
    meta_info: Any = None


class _Completion(msgspec.Struct, gc=False):
    choices: list[_Choice] | None = None
    id: Any = None
    model: Any = None
    usage: Any = None
    prompt_token_ids: list[int] | None = None


_completion = msgspec.json.Decoder(_Completion)


def read_captured(raw: bytes, provider: str) -> tuple[ModelResponse, Tokens] | None:
    """The response in a plain Chat Completions body ``raw`` (JSON) and its tokens, or None when
    the body is not the usual shape (the caller then reads it as a dict, :func:`read_tokens`).

    A captured answer is mostly token ids and a ``{"token", "logprob", "bytes", "top_logprobs"}``
    object per sampled token; decoded into dicts, that is a dict, a string and a list per
    token for one float. Typed decoding reads the floats and ids and skips the rest.
    """
    try:
        body = _completion.decode(raw)
    except msgspec.MsgspecError:  # not JSON, or not the usual shape: the general reader says what is wrong
        return None
    if not body.choices:
        return None
    choice = body.choices[0]
    data = {
        "id": body.id,
        "model": body.model,
        "usage": body.usage,
        "choices": [
            {"message": choice.message, "finish_reason": choice.finish_reason, "stop_reason": choice.stop_reason}
        ],
    }
    response = parse_completion(data, provider)
    prompt = body.prompt_token_ids if body.prompt_token_ids is not None else choice.prompt_token_ids
    content = choice.logprobs.content if choice.logprobs is not None else None
    logprobs = None if content is None else [item.logprob for item in content]
    return response, _tokens(prompt, choice.token_ids, logprobs, {"meta_info": choice.meta_info}, response)


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
        prompt_bytes, completion_bytes = ids_bytes(prompt or (), "prompt"), ids_bytes(completion or (), "completion")
    except ValueError as exc:
        return Tokens(problem=f"the server sent unreadable token ids: {exc}")
    problem = _mismatch(len(prompt_bytes) // 4, len(completion_bytes) // 4, prompt, completion, response)
    packed = b""
    if logprobs is not None:
        count = len(completion or ())
        if len(logprobs) != count:
            problem = problem or f"the server sent {len(logprobs)} logprobs for {count} completion ids"
        else:
            packed, trouble = _packed(logprobs)
            problem = problem or trouble
    return as_read(prompt_bytes, completion_bytes, packed, problem)


def _packed(logprobs: Any) -> tuple[bytes, str | None]:
    """The logprobs as 32-bit floats (NaN for none), and what was wrong with them."""
    try:  # the usual case: every one a number, in one C call (struct converts each directly)
        return struct.pack(f"{len(logprobs)}f", *logprobs), None
    except (struct.error, OverflowError):  # a None, something else, or a number no 32-bit float holds
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


def _mismatch(seen: int, sampled: int, prompt: Any, completion: Any, response: ModelResponse) -> str | None:
    if prompt is None:
        return "the server sent no prompt token ids"
    if completion is None:
        return "the server sent no completion token ids"
    usage = response.usage
    if usage.output_tokens and usage.output_tokens != sampled:
        return f"the server sent {sampled} completion ids but counted {usage.output_tokens} completion tokens"
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
