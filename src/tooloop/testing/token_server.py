"""A small inference server on 127.0.0.1 that speaks vLLM's token shapes, for testing rollouts offline.

:class:`TokenServer` answers ``POST /v1/chat/completions`` (plain and streamed) the way vLLM does
when asked for tokens: ``return_token_ids`` adds the prompt's ids (``prompt_token_ids``, on the
first chunk of a stream) and the sampled ids (``choices[].token_ids``, per chunk when streamed);
``logprobs`` adds ``choices[].logprobs.content[].logprob``. ``POST /tokenize`` (at the root, as
vLLM's) renders and tokenizes messages, and ``POST /v1/completions`` takes a prompt of token ids.

The "model" is a function you write (``policy(messages, number) -> Sample``) and its tokens come
from :class:`ByteTokenizer`: one id per UTF-8 byte plus two special tokens, with a ChatML
template whose assistant turns are Hermes-style (``<tool_call>{json}</tool_call>``). With
``keep_reasoning=False`` the template drops earlier turns' ``<think>`` blocks, as many real
templates do: then the prompt ids of a turn do not extend the previous turn's ids.
``token_ids=False`` makes it ignore requests for ids, ``tokenize_endpoint=False`` removes
``/tokenize``, a chat request's ``input_ids`` (SGLang's token-in) replace the rendered prompt,
and ``mangle`` edits each answer before
it is sent (ids of the wrong length, logprobs missing), for testing what a client does with
a server that gets it wrong.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ._http import Answer, Listener, running_in_thread

__all__ = ["ByteTokenizer", "Sample", "TokenServer", "hermes_calls", "serve"]

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"


class ByteTokenizer:
    """One token per UTF-8 byte (ids 0-255), ``<|im_start|>`` = 256 and ``<|im_end|>`` = 257."""

    special: ClassVar[dict[str, int]] = {IM_START: 256, IM_END: 257}
    _split = re.compile("(" + "|".join(re.escape(s) for s in special) + ")")

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``."""
        ids: list[int] = []
        for piece in self._split.split(text):
            if piece in self.special:
                ids.append(self.special[piece])
            elif piece:
                ids.extend(piece.encode("utf-8"))
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (incomplete UTF-8 sequences replaced)."""
        names = {v: k for k, v in self.special.items()}
        out: list[str] = []
        run = bytearray()
        for token in ids:
            if token in names:
                out.append(run.decode("utf-8", "replace"))
                run.clear()
                out.append(names[token])
            else:
                run.append(token)
        out.append(run.decode("utf-8", "replace"))
        return "".join(out)


@dataclass(frozen=True)
class Sample:
    """What the policy "samples" for one request: reasoning, text, and tool calls ``(name, arguments)``."""

    text: str = ""
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    thinking: str = ""


Policy = Callable[[list[dict[str, Any]], int], Sample]
"""``policy(messages, number)``: the sample for the request's messages (``number`` counts requests from 1)."""


def render_assistant(thinking: str, text: str, calls: Sequence[tuple[str, Any]]) -> str:
    """An assistant turn as the model writes it, up to and including ``<|im_end|>``."""
    think = f"<think>{thinking}</think>" if thinking else ""
    tools = "".join(
        f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>" for name, arguments in calls
    )
    return f"{think}{text}{tools}{IM_END}"


_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def hermes_calls(text: str) -> tuple[str, list[tuple[str, Any]]]:
    """The text before the first ``<tool_call>`` and the calls ``(name, arguments)`` after it."""
    calls = [json.loads(body) for body in _CALL.findall(text)]
    head = text.split("<tool_call>", 1)[0]
    return head, [(call["name"], call.get("arguments", {})) for call in calls]


def _message_calls(message: Mapping[str, Any]) -> list[tuple[str, Any]]:
    calls = []
    for call in message.get("tool_calls") or ():
        function = call["function"]
        arguments = function.get("arguments") or "{}"
        calls.append((function["name"], json.loads(arguments) if isinstance(arguments, str) else arguments))
    return calls


@dataclass
class TokenServer:
    """The server (see the module docstring); ``url`` is its ``/v1`` base URL once started."""

    policy: Policy
    keep_reasoning: bool = True
    token_ids: bool = True
    tokenize_endpoint: bool = True
    """False: ``/tokenize`` answers 404, as a server without one."""
    chunk_tokens: int = 3
    mangle: Callable[[Any, int], None] | None = None
    """Called with each answer (a completion dict, or a stream's list of chunk dicts) and its number."""
    tokenizer: ByteTokenizer = field(default_factory=ByteTokenizer)
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Every request body received, in order."""
    sampled: list[tuple[list[int], list[int], list[float]]] = field(default_factory=list)
    """``(prompt ids, completion ids, logprobs)`` of every answer, as generated (before ``mangle``)."""
    port: int = 0
    _listener: Listener | None = None

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        """The server's root URL, where ``/tokenize`` is."""
        return f"http://127.0.0.1:{self.port}"

    def render(self, messages: Sequence[Mapping[str, Any]], tools: Any = None, generation: bool = True) -> str:
        """The chat template: ChatML turns, tools in the system turn, Hermes-style calls."""
        out = []
        if tools:
            out.append(f"{IM_START}system\n# Tools\n{json.dumps(tools)}{IM_END}\n")
        for message in messages:
            role = message["role"]
            if role == "assistant":
                thinking = message.get("reasoning") or message.get("reasoning_content") or ""
                thinking = thinking if self.keep_reasoning else ""
                text = render_assistant(thinking, message.get("content") or "", _message_calls(message))
                out.append(f"{IM_START}assistant\n{text}\n")
            else:
                out.append(f"{IM_START}{role}\n{_text(message.get('content'))}{IM_END}\n")
        if generation:
            out.append(f"{IM_START}assistant\n")
        return "".join(out)

    def logprob(self, token: int, position: int) -> float:
        """The (made up, deterministic) log-probability of sampling ``token`` at ``position``."""
        return -(((token * 31 + position * 17) % 97) + 1) / 100

    def _generate(self, prompt: list[int], messages: list[dict[str, Any]]) -> tuple[Sample, list[int], list[float]]:
        sample = self.policy(messages, len(self.requests))
        completion = self.tokenizer.encode(render_assistant(sample.thinking, sample.text, sample.calls))
        logprobs = [self.logprob(t, i) for i, t in enumerate(completion)]
        self.sampled.append((list(prompt), list(completion), list(logprobs)))  # copies: mangle may edit the answer
        return sample, completion, logprobs

    def chat(self, body: dict[str, Any]) -> tuple[bytes, bytes]:
        """The answer to one chat request: its content type and body."""
        messages = body["messages"]
        prompt = body.get("input_ids") or self.tokenizer.encode(self.render(messages, body.get("tools")))  # SGLang's
        sample, completion, logprobs = self._generate(prompt, messages)
        wants_ids = bool(body.get("return_token_ids")) and self.token_ids
        wants_logprobs = bool(body.get("logprobs"))
        if body.get("stream"):
            chunks = self._chunks(sample, prompt, completion, logprobs, wants_ids, wants_logprobs)
            if self.mangle is not None:
                self.mangle(chunks, len(self.requests))
            data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
            return b"text/event-stream", data
        answer = self._completion(sample, prompt, completion, logprobs, wants_ids, wants_logprobs)
        if self.mangle is not None:
            self.mangle(answer, len(self.requests))
        return b"application/json", json.dumps(answer).encode()

    def _logprob_items(self, ids: Sequence[int], logprobs: Sequence[float]) -> dict[str, Any]:
        content: list[dict[str, Any]] = [
            {"token": self.tokenizer.decode([t]), "logprob": lp, "bytes": None, "top_logprobs": []}
            for t, lp in zip(ids, logprobs, strict=True)
        ]
        return {"content": content}

    def _completion(
        self,
        sample: Sample,
        prompt: list[int],
        completion: list[int],
        logprobs: list[float],
        ids: bool,
        with_logprobs: bool,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": sample.text or None}
        if sample.thinking:
            message["reasoning"] = sample.thinking
        if sample.calls:
            message["tool_calls"] = [
                {"id": f"call_{len(self.requests)}_{n}", "type": "function", "function": _function(name, arguments)}
                for n, (name, arguments) in enumerate(sample.calls)
            ]
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "logprobs": self._logprob_items(completion, logprobs) if with_logprobs else None,
            "finish_reason": "tool_calls" if sample.calls else "stop",
        }
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": "token-server",
            "choices": [choice],
            "usage": _usage(prompt, completion),
        }
        if ids:
            choice["token_ids"] = completion
            answer["prompt_token_ids"] = prompt
        return answer

    def _chunks(
        self,
        sample: Sample,
        prompt: list[int],
        completion: list[int],
        logprobs: list[float],
        ids: bool,
        with_logprobs: bool,
    ) -> list[dict[str, Any]]:
        base = {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion.chunk", "created": 0}
        first: dict[str, Any] = {**base, "model": "token-server"}
        first["choices"] = [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]
        if ids:
            first["prompt_token_ids"] = prompt
        chunks = [first]
        think = len(self.tokenizer.encode(f"<think>{sample.thinking}</think>")) if sample.thinking else 0
        text = len(self.tokenizer.encode(sample.text))
        segments = [("reasoning", 0, think), ("content", think, think + text), ("calls", think + text, len(completion))]
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        for kind, begin, end in segments:
            for start in range(begin, end, self.chunk_tokens):
                piece = completion[start : min(start + self.chunk_tokens, end)]
                delta = self._delta(kind, sample, piece, start == begin, decoder)
                choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
                if with_logprobs:
                    choice["logprobs"] = self._logprob_items(piece, logprobs[start : start + len(piece)])
                if ids:
                    choice["token_ids"] = piece
                chunks.append({**base, "model": "token-server", "choices": [choice]})
        finish = "tool_calls" if sample.calls else "stop"
        chunks.append(
            {**base, "model": "token-server", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        )
        chunks.append({**base, "model": "token-server", "choices": [], "usage": _usage(prompt, completion)})
        return chunks

    def _delta(self, kind: str, sample: Sample, piece: list[int], first: bool, decoder: Any) -> dict[str, Any]:
        """What a chunk of tokens shows: reasoning, text, or (on the calls' first chunk) the calls."""
        if kind == "reasoning":
            return {"reasoning": sample.thinking if first else ""}
        if kind == "content":
            return {"content": decoder.decode(bytes(t for t in piece if t < 256))}
        if first and sample.calls:
            calls = [
                {"index": n, "id": f"call_{len(self.requests)}_{n}", "type": "function", "function": _function(a, b)}
                for n, (a, b) in enumerate(sample.calls)
            ]
            return {"tool_calls": calls}
        return {}

    def tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        """vLLM's ``/tokenize``: ``messages`` (rendered with the template) or a ``prompt`` text."""
        if "messages" in body:
            text = self.render(body["messages"], body.get("tools"), bool(body.get("add_generation_prompt", True)))
        else:
            text = body["prompt"]
        tokens = self.tokenizer.encode(text)
        return {"count": len(tokens), "max_model_len": 1 << 20, "tokens": tokens, "token_strs": None}

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        """vLLM's ``/v1/completions`` with a prompt of token ids: the conversation is read back from them."""
        prompt = body["prompt"]
        if not (isinstance(prompt, list) and all(type(t) is int for t in prompt)):
            raise ValueError("this server takes prompts of token ids only")
        messages = _parse_chatml(self.tokenizer.decode(prompt))
        _, completion, logprobs = self._generate(prompt, messages)
        limit = body.get("max_tokens") or 16  # vLLM's default for the completions endpoint
        cut = len(completion) > limit
        completion, logprobs = completion[:limit], logprobs[:limit]
        choice: dict[str, Any] = {
            "index": 0,
            "text": self.tokenizer.decode([t for t in completion if t != ByteTokenizer.special[IM_END]]),
            "finish_reason": "length" if cut else "stop",
        }
        if body.get("logprobs") is not None:
            choice["logprobs"] = {
                "tokens": [self.tokenizer.decode([t]) for t in completion],
                "token_logprobs": logprobs,
                "top_logprobs": None,
                "text_offset": [],
            }
        if body.get("return_token_ids") and self.token_ids:
            choice["token_ids"] = completion
            choice["prompt_token_ids"] = prompt
        return {
            "id": f"cmpl-{len(self.requests)}",
            "object": "text_completion",
            "created": 0,
            "model": "token-server",
            "choices": [choice],
            "usage": _usage(prompt, completion),
        }

    async def start(self, port: int = 0) -> None:
        """Listen on 127.0.0.1 (``port`` 0: any free port)."""
        self._listener = Listener(self._respond)
        self.port = await self._listener.start(port)

    async def close(self) -> None:
        """Stop listening and wait for the open connections to close."""
        if self._listener is not None:
            await self._listener.close()

    async def _respond(self, path: str, body: dict[str, Any]) -> Answer:
        return self._route(path, body)

    def _route(self, path: str, body: dict[str, Any]) -> Answer:
        try:
            if path == "/tokenize" and self.tokenize_endpoint:
                return "200 OK", b"application/json", json.dumps(self.tokenize(body)).encode()
            self.requests.append(body)
            if path == "/v1/chat/completions":
                kind, payload = self.chat(body)
                return "200 OK", kind, payload
            if path == "/v1/completions":
                return "200 OK", b"application/json", json.dumps(self.completions(body)).encode()
        except (KeyError, TypeError, ValueError) as exc:
            error = {"error": {"message": str(exc), "type": "BadRequestError", "code": 400}}
            return "400 Bad Request", b"application/json", json.dumps(error).encode()
        error = {"error": {"message": f"no route {path}", "type": "NotFoundError", "code": 404}}
        return "404 Not Found", b"application/json", json.dumps(error).encode()


def _function(name: str, arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": json.dumps(arguments)}


def _usage(prompt: Sequence[int], completion: Sequence[int]) -> dict[str, int]:
    return {
        "prompt_tokens": len(prompt),
        "completion_tokens": len(completion),
        "total_tokens": len(prompt) + len(completion),
    }


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


_TURN = re.compile(re.escape(IM_START) + r"(\w+)\n(.*?)(?:" + re.escape(IM_END) + r"\n|$)", re.DOTALL)


def _parse_chatml(text: str) -> list[dict[str, Any]]:
    """The messages a rendered prompt holds (the open generation turn left out)."""
    messages: list[dict[str, Any]] = []
    for role, body in _TURN.findall(text):
        if role == "assistant" and not body:
            continue
        if role == "assistant":
            head, calls = hermes_calls(re.sub(r"^<think>.*?</think>", "", body, flags=re.DOTALL))
            message: dict[str, Any] = {"role": "assistant", "content": head}
            if calls:
                message["tool_calls"] = [{"function": _function(n, a)} for n, a in calls]
            messages.append(message)
        elif not (role == "system" and body.startswith("# Tools\n")):
            messages.append({"role": role, "content": body})
    return messages


@contextmanager
def serve(policy: Policy, **options: Any) -> Iterator[TokenServer]:
    """Run a :class:`TokenServer` on its own event loop in a thread while the block runs."""
    server = TokenServer(policy, **options)
    with running_in_thread(server.start, server.close, "token server"):
        yield server
