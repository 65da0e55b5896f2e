"""Token-in: the next turn sent as the previous turn's exact ids plus the new messages' tokens.

Re-rendering a conversation from its messages drifts from what the model actually saw (chat
templates that drop earlier reasoning, tokenisations that differ at the seams), so with
``token_in=True`` every request after the first is built from ids:

1. the previous response's prompt and sampled ids, kept on its message (``capture_tokens``);
2. the template's tokens after that response's end-of-turn token, then the appended messages
   (tool results, a user's reply) and the generation prompt: the server's ``/tokenize``
   renders the history up to the previous answer, and the whole conversation, and the
   difference is what the new messages add.

vLLM's chat endpoint takes no ids, so there the prompt goes to ``/v1/completions`` and the
tool calls are read from the completion text (Hermes style, ``<tool_call>{json}</tool_call>``,
after an optional ``<think>`` block); SGLang's chat endpoint takes them as ``input_ids``. When
this cannot be done (no ``/tokenize``, no usable previous tokens, a template that renders the
history differently once messages are added) the request goes as messages, and the response's
tokens say why (``Tokens.fallback``).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ...errors import ModelResponseError
from ...messages import Message, ModelResponse, Tokens, ToolCallMessage, UserMessage, response_messages
from ...transport.client import Client, StatusError
from ...transport.http import TransportError
from ..base import ModelSettings
from .response import build_response, usage_from
from .tokens import checked

__all__ = [
    "COMPLETIONS_PATH",
    "FIRST",
    "TokenInUnavailable",
    "completions_body",
    "hermes_calls",
    "previous_tokens",
    "read_completion",
    "token_in_prompt",
]

COMPLETIONS_PATH = "/completions"
FIRST = "no earlier response"
"""Why the first request of a conversation goes as messages (nothing to continue: no fallback)."""


class TokenInUnavailable(Exception):
    """Why this request cannot go as tokens (it goes as messages instead)."""


def previous_tokens(messages: Sequence[Message]) -> Tokens:
    """The usable tokens of the last model response in ``messages``, followed only by tool
    results and user messages; :class:`TokenInUnavailable` otherwise."""
    found = None
    for position, message in response_messages(messages):
        found = (position, message)
    if found is None:
        raise TokenInUnavailable(FIRST)
    position, message = found
    tokens = message.tokens
    if tokens is None or not tokens.ok:
        why = "none were captured" if tokens is None else tokens.problem or "its ids are incomplete"
        raise TokenInUnavailable(f"the previous response's tokens cannot be used: {why}")
    for later in messages[position + 1 :]:
        if not isinstance(later, ToolCallMessage | UserMessage):
            raise TokenInUnavailable(f"a {type(later).__name__} follows the previous response")
    return tokens


async def token_in_prompt(root: Client, body: Mapping[str, Any], previous: Tokens) -> tuple[list[int], int]:
    """The prompt ids of the request ``body`` (a chat body) continuing ``previous``, and the
    server's context length; :class:`TokenInUnavailable` when the server cannot tell them."""
    messages = body["messages"]
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    if last < 0:
        raise TokenInUnavailable("the request has no earlier answer")
    extra = {"tools": body["tools"]} if body.get("tools") else {}
    history, whole = await asyncio.gather(
        _tokenize(root, {"messages": messages[: last + 1], "add_generation_prompt": False, **extra}),
        _tokenize(root, {"messages": messages, "add_generation_prompt": True, **extra}),
    )
    before, after = history["tokens"], whole["tokens"]
    if after[: len(before)] != before:
        raise TokenInUnavailable("the template renders the history differently once the new messages are added")
    completion = previous.completion_ids
    end = completion[-1]
    if end not in before:
        raise TokenInUnavailable("the template does not close the answer with the token the model ended it with")
    tail = before[len(before) - before[::-1].index(end) :]
    prompt = previous.prompt_ids.tolist() + completion.tolist() + tail + after[len(before) :]
    return prompt, int(whole.get("max_model_len") or 0)


async def _tokenize(root: Client, request: dict[str, Any]) -> dict[str, Any]:
    try:
        answer = await root.post_json("/tokenize", request)
    except StatusError as exc:
        raise TokenInUnavailable(f"the server's /tokenize answered {exc.status}") from None
    except TransportError as exc:
        raise TokenInUnavailable(f"the server's /tokenize cannot be reached: {exc}") from None
    tokens = answer.get("tokens") if isinstance(answer, dict) else None
    if not isinstance(tokens, list) or not all(type(t) is int for t in tokens):
        raise TokenInUnavailable("the server's /tokenize answered without a list of token ids")
    return answer  # type: ignore[no-any-return]


def completions_body(
    model: str, prompt: list[int], settings: ModelSettings, context: int, *, logprobs: bool = True
) -> dict[str, Any]:
    """The ``/v1/completions`` body for a prompt of ids (``max_tokens`` set: vLLM's default is 16),
    asking for the sampled ids' logprobs unless ``logprobs`` is false."""
    limit = settings.max_tokens or (context - len(prompt) if context > len(prompt) else None)
    body: dict[str, Any] = {"model": model, "prompt": prompt, "return_token_ids": True}
    if logprobs:
        body["logprobs"] = 0
    if limit is not None:
        body["max_tokens"] = limit
    for name in ("temperature", "top_p", "seed"):
        value = getattr(settings, name)
        if value is not None:
            body[name] = value
    if settings.stop:
        body["stop"] = list(settings.stop)
    if settings.extra:
        body.update(settings.extra)
    return body


_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_THINK = re.compile(r"^\s*<think>(.*?)</think>", re.DOTALL)


def hermes_calls(text: str) -> tuple[str, str, list[tuple[str | None, str, str]]]:
    """``(reasoning, text, calls)`` of a completion in the Hermes format: an optional leading
    ``<think>`` block, then text, then ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
    blocks. A block that is not such JSON becomes a call without a name, its text as arguments,
    so the loop tells the model what was wrong."""
    reasoning = ""
    thinking = _THINK.match(text)
    if thinking:
        reasoning = thinking.group(1)
        text = text[thinking.end() :]
    calls: list[tuple[str | None, str, str]] = []
    for block in _CALL.findall(text):
        try:
            data = json.loads(block)
            name = data["name"]
            arguments = data.get("arguments", {})
        except (ValueError, TypeError, KeyError):
            calls.append((None, "", block))
            continue
        calls.append((None, str(name), arguments if isinstance(arguments, str) else json.dumps(arguments)))
    head = text.split("<tool_call>", 1)[0] if calls else text
    return reasoning, head, calls


def read_completion(data: Any, prompt: list[int], provider: str) -> ModelResponse:
    """The response (with its tokens) for a ``/v1/completions`` answer to a prompt of ids."""
    try:
        return _read_completion(data, prompt, provider)
    except (AttributeError, TypeError, KeyError, IndexError) as exc:
        raise ModelResponseError(
            f"{provider} returned a completion tooloop cannot read: {exc!r}", provider=provider
        ) from exc


def _read_completion(data: Any, prompt: list[int], provider: str) -> ModelResponse:
    choice = data["choices"][0]
    reasoning, text, calls = hermes_calls(choice.get("text") or "")
    response = build_response(
        text=text,
        refusal="",
        calls=calls,
        finish_reason=choice.get("finish_reason") or None,
        usage=usage_from(data.get("usage")),
        model=data.get("model"),
        reasoning=reasoning,
        provider=provider,
    )
    logprobs = choice.get("logprobs")
    values = logprobs.get("token_logprobs") if isinstance(logprobs, Mapping) else None
    sent = choice.get("prompt_token_ids") or data.get("prompt_token_ids") or prompt
    tokens = checked(sent, choice.get("token_ids"), values, response)
    if tokens.ok and tokens.prompt_ids.tolist() != prompt:
        tokens = Tokens(tokens.prompt, tokens.completion, tokens.logprobs, "the server ran another prompt than sent")
    return replace(response, tokens=tokens)
