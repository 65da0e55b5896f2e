"""A scripted model server speaking four wire formats, for the per-provider floors (bench/providers.py).

One process answers, on 127.0.0.1, as

* OpenAI Chat Completions: ``POST .../chat/completions`` (a ``chat.completion`` body, or
  ``chat.completion.chunk`` SSE events with tool-call fragments, a usage chunk and ``[DONE]``);
* OpenAI Responses: ``POST .../responses`` (a ``response`` object, or the named events
  ``response.created`` ... ``response.output_item.added``, ``response.function_call_arguments.delta``,
  ``response.output_text.delta`` ... ``response.completed``);
* Anthropic Messages: ``POST .../v1/messages`` (a ``message``, or the named events
  ``message_start``, ``content_block_start``, ``content_block_delta`` with ``text_delta`` /
  ``input_json_delta``, ``content_block_stop``, ``message_delta``, ``message_stop``);
* Gemini: ``POST .../models/{model}:generateContent`` (a ``GenerateContentResponse``) and
  ``:streamGenerateContent?alt=sse`` (one ``GenerateContentResponse`` per ``data:`` event, CRLF
  separated, usage and ``finishReason`` on the last).

The model name is the script, as in the shared bench's mock: ``mock-k2-t3-l50`` = 2 parallel
``add`` calls per turn, 3 tool turns, 50 ms per request; ``-s1`` adds ~300 characters of text
before each turn's calls (the long-history bench). Counting the assistant turns with tool calls
in the request: fewer than T -> K calls of the first tool (call i of turn r adds 10 r + i + 1 and
i + 2); else the answer ``The total is N.``, N the sum of the first integer of every tool result.

A body goes out in one write, framed with ``content-length`` (as the shared mock does), or with
``--chunked`` as one HTTP chunk per SSE event (as the providers send). Answers are cached by what
they depend on, so the server's own CPU stays small next to the client's. ``GET /stats`` returns
``{"requests", "request_bytes", "cpu_s"}``.

    python bench/mock_wire.py [--port 0] [--chunked]      # prints "PORT <n>" once listening
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from collections.abc import Callable
from typing import Any

import httptools
import orjson

_INT = re.compile(rb"-?\d+")
_SAY = "Let me add these numbers with the tool before I answer, one call per pair of them. " * 4
_CREATED = 1764288000
_COUNTS = {"requests": 0, "request_bytes": 0}


def parse_model(name: str) -> tuple[int, int, float, bool]:
    """``mock-k2-t3-l50-s1`` -> (k=2, t=3, latency 0.05 s, say=True); defaults k=1, t=1, l=0."""
    opts = dict(re.findall(r"-([ktls])(\d+)", name))
    return int(opts.get("k", 1)), int(opts.get("t", 1)), int(opts.get("l", 0)) / 1000, opts.get("s", "0") != "0"


def call_args(turn: int, i: int) -> dict[str, int]:
    return {"a": 10 * turn + i + 1, "b": i + 2}


def first_int(value: Any) -> int:
    found = _INT.search(value.encode() if isinstance(value, str) else orjson.dumps(value))
    return int(found.group()) if found else 0


class Script:
    """What to answer: K calls of ``tool`` for turn ``turn``, or the final text."""

    __slots__ = ("k", "say", "text", "tool", "turn")

    def __init__(self, k: int, t: int, turns: int, total: int, tool: str, say: bool) -> None:
        self.k, self.turn, self.tool, self.say = k, turns, tool, say
        self.text = f"The total is {total}." if turns >= t else ""

    def calls(self) -> list[tuple[str, str, dict[str, int]]]:
        """(id suffix, tool name, arguments) of this turn's calls; none once the text is due."""
        if self.text:
            return []
        return [(f"{self.turn}_{i}", self.tool, call_args(self.turn, i)) for i in range(self.k)]

    def key(self) -> tuple[Any, ...]:
        return (self.k, self.turn, self.tool, self.say, self.text)


def words(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text)


def halves(text: str) -> list[str]:
    half = len(text) // 2
    return [text[:half], text[half:]]


# ---------------------------------------------------------------- OpenAI Chat Completions


def chat_script(req: dict[str, Any]) -> Script:
    k, t, _, say = parse_model(req.get("model", ""))
    turns = total = 0
    for m in req["messages"]:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            turns += 1
        elif m.get("role") == "tool":
            total += first_int(m.get("content"))
    tools = req.get("tools") or [{"function": {"name": "add"}}]
    return Script(k, t, turns, total, tools[0]["function"]["name"], say)


def chat_usage(prompt: int, out: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": out,
        "total_tokens": prompt + out,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def chat_reply(req: dict[str, Any], s: Script, stream: bool, prompt: int) -> tuple[list[bytes], bool]:
    calls = [
        {"id": f"call_{sid}", "type": "function", "function": {"name": name, "arguments": orjson.dumps(a).decode()}}
        for sid, name, a in s.calls()
    ]
    content = s.text or (_SAY if s.say else None)
    finish = "tool_calls" if calls else "stop"
    usage = chat_usage(prompt, 10 * max(1, len(calls)))
    base = {"id": "chatcmpl-mock", "created": _CREATED, "model": req.get("model"), "system_fingerprint": "fp_mock"}
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
        if calls:
            message["tool_calls"] = calls
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        body = {**base, "object": "chat.completion", "choices": [choice], "usage": usage, "service_tier": "default"}
        return [orjson.dumps(body)], False

    def chunk(delta: dict[str, Any], reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
        return b"data: " + orjson.dumps({**base, "object": "chat.completion.chunk", "choices": [choice]}) + b"\n\n"

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    out += [chunk({"content": w}) for w in words(content or "")]
    for i, c in enumerate(calls):
        start = {**c, "function": {"name": c["function"]["name"], "arguments": ""}}
        out.append(chunk({"tool_calls": [{"index": i, **start}]}))
        out += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
            for p in halves(c["function"]["arguments"])
        ]
    out.append(chunk({}, finish))
    if (req.get("stream_options") or {}).get("include_usage"):
        out.append(
            b"data: "
            + orjson.dumps({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
            + b"\n\n"
        )
    out.append(b"data: [DONE]\n\n")
    return out, True


# ---------------------------------------------------------------- OpenAI Responses


def responses_script(req: dict[str, Any]) -> Script:
    k, t, _, say = parse_model(req.get("model", ""))
    calls = total = 0
    items = req.get("input")
    for item in items if isinstance(items, list) else []:
        kind = item.get("type")
        if kind == "function_call":
            calls += 1
        elif kind == "function_call_output":
            total += first_int(item.get("output"))
    tools = req.get("tools") or [{"name": "add"}]
    return Script(k, t, -(-calls // max(k, 1)), total, tools[0]["name"], say)


def responses_object(req: dict[str, Any], status: str, output: list[Any], usage: Any) -> dict[str, Any]:
    return {
        "id": "resp_mock",
        "object": "response",
        "created_at": _CREATED,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": req.get("instructions"),
        "max_output_tokens": req.get("max_output_tokens"),
        "model": req.get("model"),
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": req.get("store", True),
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": req.get("tools") or [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def responses_usage(prompt: int, out: int) -> dict[str, Any]:
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + out,
    }


def responses_message(text: str, status: str, done: bool) -> dict[str, Any]:
    content = [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}] if done else []
    return {"id": "msg_mock", "type": "message", "status": status, "content": content, "role": "assistant"}


def responses_call(sid: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": f"fc_{sid}",
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": f"call_{sid}",
        "name": name,
    }


class _Events:
    """Named SSE events with the Responses API's sequence numbers."""

    def __init__(self) -> None:
        self.out: list[bytes] = []

    def add(self, kind: str, **fields: Any) -> None:
        data = orjson.dumps({"type": kind, "sequence_number": len(self.out), **fields})
        self.out.append(b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n")


def responses_text_events(ev: _Events, index: int, text: str) -> None:
    ev.add("response.output_item.added", output_index=index, item=responses_message("", "in_progress", False))
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    ev.add("response.content_part.added", item_id="msg_mock", output_index=index, content_index=0, part=part)
    for w in words(text):
        ev.add(
            "response.output_text.delta",
            item_id="msg_mock",
            output_index=index,
            content_index=0,
            delta=w,
            logprobs=[],
            obfuscation="xQ3",
        )
    ev.add("response.output_text.done", item_id="msg_mock", output_index=index, content_index=0, text=text, logprobs=[])
    ev.add(
        "response.content_part.done",
        item_id="msg_mock",
        output_index=index,
        content_index=0,
        part={**part, "text": text},
    )
    ev.add("response.output_item.done", output_index=index, item=responses_message(text, "completed", True))


def responses_reply(req: dict[str, Any], s: Script, stream: bool, prompt: int) -> tuple[list[bytes], bool]:
    text = s.text or (_SAY if s.say else "")
    calls = [(sid, name, orjson.dumps(a).decode()) for sid, name, a in s.calls()]
    output: list[Any] = [responses_message(text, "completed", True)] if text else []
    output += [responses_call(sid, name, args, "completed") for sid, name, args in calls]
    usage = responses_usage(prompt, 10 * max(1, len(calls)))
    if not stream:
        return [orjson.dumps(responses_object(req, "completed", output, usage))], False
    ev = _Events()
    ev.add("response.created", response=responses_object(req, "in_progress", [], None))
    ev.add("response.in_progress", response=responses_object(req, "in_progress", [], None))
    if text:
        responses_text_events(ev, 0, text)
    for n, (sid, name, args) in enumerate(calls, start=1 if text else 0):
        ev.add("response.output_item.added", output_index=n, item=responses_call(sid, name, "", "in_progress"))
        for piece in halves(args):
            ev.add(
                "response.function_call_arguments.delta",
                item_id=f"fc_{sid}",
                output_index=n,
                delta=piece,
                obfuscation="k2",
            )
        ev.add("response.function_call_arguments.done", item_id=f"fc_{sid}", output_index=n, arguments=args)
        ev.add("response.output_item.done", output_index=n, item=responses_call(sid, name, args, "completed"))
    ev.add("response.completed", response=responses_object(req, "completed", output, usage))
    return ev.out, True


# ---------------------------------------------------------------- Anthropic Messages


def anthropic_script(req: dict[str, Any]) -> Script:
    k, t, _, say = parse_model(req.get("model", ""))
    turns = total = 0
    for m in req["messages"]:
        content = m.get("content")
        if not isinstance(content, list):
            continue
        kinds = [b.get("type") for b in content]
        if m.get("role") == "assistant" and "tool_use" in kinds:
            turns += 1
        for b in content:
            if b.get("type") == "tool_result":
                total += first_int(b.get("content"))
    tools = req.get("tools") or [{"name": "add"}]
    return Script(k, t, turns, total, tools[0]["name"], say)


def anthropic_usage(prompt: int, out: int) -> dict[str, Any]:
    return {
        "input_tokens": prompt,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": out,
        "service_tier": "standard",
    }


def anthropic_reply(req: dict[str, Any], s: Script, stream: bool, prompt: int) -> tuple[list[bytes], bool]:
    text = s.text or (_SAY if s.say else "")
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "tool_use", "id": f"toolu_{sid}", "name": name, "input": a} for sid, name, a in s.calls()]
    stop = "tool_use" if s.calls() else "end_turn"
    out_tokens = 10 * max(1, len(blocks))
    message = {
        "id": "msg_mock",
        "type": "message",
        "role": "assistant",
        "model": req.get("model"),
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": anthropic_usage(prompt, out_tokens),
    }
    if not stream:
        return [orjson.dumps(message)], False
    out: list[bytes] = []

    def add(kind: str, **fields: Any) -> None:
        out.append(b"event: " + kind.encode() + b"\ndata: " + orjson.dumps({"type": kind, **fields}) + b"\n\n")

    add("message_start", message={**message, "content": [], "stop_reason": None, "usage": anthropic_usage(prompt, 1)})
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            add("content_block_start", index=index, content_block={"type": "text", "text": ""})
            if index == 0:
                add("ping")
            for w in words(block["text"]):
                add("content_block_delta", index=index, delta={"type": "text_delta", "text": w})
        else:
            add("content_block_start", index=index, content_block={**block, "input": {}})
            for piece in halves(orjson.dumps(block["input"]).decode()):
                add("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})
        add("content_block_stop", index=index)
    add(
        "message_delta",
        delta={"stop_reason": stop, "stop_sequence": None},
        usage={
            "input_tokens": prompt,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": out_tokens,
        },
    )
    add("message_stop")
    return out, True


# ---------------------------------------------------------------- Gemini


def gemini_script(req: dict[str, Any], model: str) -> Script:
    k, t, _, say = parse_model(model)
    turns = total = 0
    for c in req.get("contents") or []:
        parts = c.get("parts") or []
        if c.get("role") == "model" and any("functionCall" in p for p in parts):
            turns += 1
        for p in parts:
            if "functionResponse" in p:
                total += first_int(p["functionResponse"].get("response"))
    tools = req.get("tools") or [{"functionDeclarations": [{"name": "add"}]}]
    names = [d["name"] for t_ in tools for d in t_.get("functionDeclarations") or []] or ["add"]
    return Script(k, t, turns, total, names[0], say)


_SIGNATURE = "CiQB0e2Kb8mock" + "A" * 50


def gemini_usage(prompt: int, out: int) -> dict[str, Any]:
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": out,
        "totalTokenCount": prompt + out,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }


def gemini_reply(model: str, s: Script, stream: bool, prompt: int) -> tuple[list[bytes], bool]:
    text = s.text or (_SAY if s.say else "")
    calls: list[dict[str, Any]] = [{"functionCall": {"name": name, "args": a}} for _, name, a in s.calls()]
    if calls:
        calls[0]["thoughtSignature"] = _SIGNATURE
    usage = gemini_usage(prompt, 10 * max(1, len(calls)))

    def body(parts: list[Any], finish: bool, use: Any) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            cand["finishReason"] = "STOP"
        out: dict[str, Any] = {
            "candidates": [cand],
            "usageMetadata": use,
            "modelVersion": model,
            "responseId": "mockRespId",
        }
        return out

    if not stream:
        parts = ([{"text": text}] if text else []) + calls
        return [orjson.dumps(body(parts, True, usage))], False
    pieces: list[list[Any]] = [[{"text": w}] for w in _gemini_pieces(text)]
    if calls:
        pieces.append(calls)
    lead = {"promptTokenCount": prompt, "totalTokenCount": prompt}
    out = [b"data: " + orjson.dumps(body(p, False, lead)) + b"\r\n\r\n" for p in pieces[:-1]]
    out.append(b"data: " + orjson.dumps(body(pieces[-1], True, usage)) + b"\r\n\r\n")
    return out, True


def _gemini_pieces(text: str) -> list[str]:
    """Gemini streams text in pieces of a few words."""
    w = words(text)
    return ["".join(w[i : i + 3]) for i in range(0, len(w), 3)]


# ---------------------------------------------------------------- HTTP


def answer(path: bytes, raw: bytes) -> tuple[list[bytes], bool, float]:
    """The body pieces, whether they are SSE events, and the delay for one model request."""
    req = orjson.loads(raw)
    prompt = len(raw) // 4
    if path.endswith(b"/chat/completions"):
        s = chat_script(req)
        key: tuple[Any, ...] = ("chat", req.get("model"), bool(req.get("stream")), prompt, s.key())
        make: Callable[[], tuple[list[bytes], bool]] = lambda: chat_reply(req, s, bool(req.get("stream")), prompt)  # noqa: E731
        model = req.get("model", "")
    elif path.endswith(b"/responses"):
        s = responses_script(req)
        key = ("responses", req.get("model"), bool(req.get("stream")), prompt, s.key())
        make = lambda: responses_reply(req, s, bool(req.get("stream")), prompt)  # noqa: E731
        model = req.get("model", "")
    elif path.endswith(b"/messages"):
        s = anthropic_script(req)
        key = ("anthropic", req.get("model"), bool(req.get("stream")), prompt, s.key())
        make = lambda: anthropic_reply(req, s, bool(req.get("stream")), prompt)  # noqa: E731
        model = req.get("model", "")
    else:
        model, _, method = path.rsplit(b"/", 1)[1].decode().partition(":")
        if method not in ("generateContent", "streamGenerateContent"):
            raise LookupError(path)
        s = gemini_script(req, model)
        stream = method == "streamGenerateContent"
        key = ("gemini", model, stream, prompt, s.key())
        make = lambda: gemini_reply(model, s, stream, prompt)  # noqa: E731
    found = _CACHE.get(key)
    if found is None:
        if len(_CACHE) > 20_000:
            _CACHE.clear()
        found = _CACHE[key] = make()
    return found[0], found[1], parse_model(model)[2]


_CACHE: dict[tuple[Any, ...], tuple[list[bytes], bool]] = {}


def framed(status: bytes, pieces: list[bytes], sse: bool, chunked: bool, keep: bool) -> bytes:
    ctype = b"text/event-stream" if sse else b"application/json"
    head = b"HTTP/1.1 " + status + b"\r\ncontent-type: " + ctype + (b"" if keep else b"\r\nconnection: close")
    if chunked and sse:
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
        return head + b"\r\ntransfer-encoding: chunked\r\n\r\n" + body
    body = b"".join(pieces)
    return head + b"\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body


class Server(asyncio.Protocol):
    chunked = False

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.body: list[bytes] = []

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()

    def on_message_begin(self) -> None:
        self.url, self.body = b"", []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        keep = self.parser.should_keep_alive()
        path = self.url.split(b"?")[0].rstrip(b"/")
        delay = 0.0
        if path.endswith(b"/stats"):
            stats = {**_COUNTS, "cpu_s": time.process_time()}
            self.send(framed(b"200 OK", [orjson.dumps(stats)], False, False, keep), keep)
            return
        raw = b"".join(self.body)
        _COUNTS["requests"] += 1
        _COUNTS["request_bytes"] += len(raw)
        try:
            pieces, sse, delay = answer(path, raw)
            response = framed(b"200 OK", pieces, sse, self.chunked, keep)
        except LookupError:
            response = framed(b"404 Not Found", [b'{"error":"not found"}'], False, False, keep)
        except Exception as e:  # a malformed request is answered, never crashes the server
            response = framed(b"400 Bad Request", [orjson.dumps({"error": repr(e)})], False, False, keep)
        if delay:
            asyncio.get_running_loop().call_later(delay, self.send, response, keep)
        else:
            self.send(response, keep)

    def send(self, response: bytes, keep: bool) -> None:
        if not self.transport.is_closing():
            self.transport.write(response)
            if not keep:
                self.transport.close()


async def serve(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(Server, "127.0.0.1", port, backlog=4096)
    print("PORT", server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--chunked", action="store_true", help="SSE bodies as one HTTP chunk per event")
    args = ap.parse_args()
    Server.chunked = args.chunked
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    try:
        asyncio.run(serve(args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
