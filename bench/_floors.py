"""The floor of each wire format: the tool loop on raw asyncio sockets and orjson, no SDK, no framework.

What one Python process minimally spends to run the bench's conversation (K parallel ``add``
calls per turn for T turns, then the answer) against a server speaking OpenAI Chat Completions,
OpenAI Responses, Anthropic Messages or Gemini ``generateContent``: build the body, POST it on a
kept-alive HTTP/1.1 connection, read the answer (``content-length`` or chunked), decode it with
orjson, run the calls, append to the history. Streamed (``stream=True``), the same loop asks for
the provider's SSE events and reads them as a streaming client must: every ``data:`` line
decoded, text and tool-call arguments put together from their deltas.

Not a product: no error handling past a status check, no general SSE parser (one ``data:`` line
per event, which is what these APIs send). It only imports asyncio and orjson, so a process that
runs a floor carries no more than that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import orjson

PARAMS = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}
Tool = Callable[..., Awaitable[Any]]
Conversation = Callable[[str], Awaitable[str]]


class Pool:
    """Kept-alive connections to one server, one per request in flight, reused."""

    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.headers = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.heads: dict[str, bytes] = {}

    def _head(self, path: str) -> bytes:
        head = self.heads.get(path)
        if head is None:
            text = (
                f"POST {self.prefix}{path} HTTP/1.1\r\nhost: {self.host}:{self.port}\r\n{self.headers}content-length: "
            )
            head = self.heads[path] = text.encode()
        return head

    async def post(self, path: str, body: Any) -> tuple[bytes, bool]:
        """The answer's body and whether it is an event stream."""
        conn = self.idle.pop() if self.idle else await asyncio.open_connection(self.host, self.port)
        reader, writer = conn
        data = orjson.dumps(body)
        writer.write(self._head(path) + str(len(data)).encode() + b"\r\n\r\n" + data)
        head = (await reader.readuntil(b"\r\n\r\n")).lower()
        if not head.startswith(b"http/1.1 200"):
            writer.close()
            raise RuntimeError(head.split(b"\r\n", 1)[0].decode())
        if b"transfer-encoding: chunked" in head:
            payload = await _chunked(reader)
        else:
            payload = await reader.readexactly(int(head.split(b"content-length:")[1].split(b"\r\n")[0]))
        self.idle.append(conn)
        return payload, b"text/event-stream" in head

    async def close(self) -> None:
        idle, self.idle = self.idle, []
        for _, writer in idle:
            writer.close()


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    """A chunked body, decoded from whatever has arrived (one read per arrival, not per chunk)."""
    buf, pos, out = b"", 0, []
    while True:
        nl = buf.find(b"\r\n", pos)
        if nl >= 0:
            size = int(buf[pos:nl].split(b";")[0], 16)
            end = nl + 2 + size + 2
            if len(buf) >= end:
                if not size:
                    return b"".join(out)
                out.append(buf[nl + 2 : nl + 2 + size])
                pos = end
                continue
        more = await reader.read(65536)
        if not more:
            raise ConnectionError("the server closed the connection inside a chunked body")
        buf, pos = buf[pos:] + more, 0


def events(payload: bytes) -> list[Any]:
    """The JSON of every ``data:`` line of an event stream (``[DONE]`` left out)."""
    return [orjson.loads(line[5:]) for line in payload.split(b"\n") if line[:5] == b"data:" and line[6:12] != b"[DONE]"]


async def run_calls(tool: Tool, arguments: list[Any]) -> list[Any]:
    return await asyncio.gather(*(tool(**a) for a in arguments))


# ---------------------------------------------------------------- OpenAI Chat Completions


def openai_chat(base_url: str, model: str, tool: Tool, stream: bool) -> tuple[Conversation, Pool]:
    pool = Pool(base_url + "/v1", {"content-type": "application/json", "authorization": "Bearer mock"})
    tools = [{"type": "function", "function": {"name": "add", "description": tool.__doc__, "parameters": PARAMS}}]
    extra: dict[str, Any] = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}

    async def run(prompt: str) -> str:
        messages: list[Any] = [{"role": "user", "content": prompt}]
        while True:
            payload, sse = await pool.post(
                "/chat/completions", {"model": model, "messages": messages, "tools": tools, **extra}
            )
            text, calls = _chat_stream(payload) if sse else _chat_plain(payload)
            if not calls:
                return text
            messages.append({"role": "assistant", "content": text or None, "tool_calls": calls})
            results = await run_calls(tool, [orjson.loads(c["function"]["arguments"]) for c in calls])
            messages += [
                {"role": "tool", "tool_call_id": c["id"], "content": str(r)}
                for c, r in zip(calls, results, strict=True)
            ]

    return run, pool


def _chat_plain(payload: bytes) -> tuple[str, list[Any]]:
    message = orjson.loads(payload)["choices"][0]["message"]
    return message.get("content") or "", message.get("tool_calls") or []


def _chat_stream(payload: bytes) -> tuple[str, list[Any]]:
    text: list[str] = []
    calls: list[Any] = []
    for chunk in events(payload):
        for choice in chunk["choices"]:
            delta = choice["delta"]
            if delta.get("content"):
                text.append(delta["content"])
            for frag in delta.get("tool_calls") or ():
                if frag.get("id"):
                    fn = frag["function"]
                    calls.append(
                        {
                            "id": frag["id"],
                            "type": "function",
                            "function": {"name": fn["name"], "arguments": [fn.get("arguments", "")]},
                        }
                    )
                else:
                    calls[frag["index"]]["function"]["arguments"].append(frag["function"]["arguments"])
    for c in calls:
        c["function"]["arguments"] = "".join(c["function"]["arguments"])
    return "".join(text), calls


# ---------------------------------------------------------------- OpenAI Responses


def openai_responses(base_url: str, model: str, tool: Tool, stream: bool) -> tuple[Conversation, Pool]:
    pool = Pool(base_url + "/v1", {"content-type": "application/json", "authorization": "Bearer mock"})
    tools = [{"type": "function", "name": "add", "description": tool.__doc__, "parameters": PARAMS, "strict": False}]
    extra = {"stream": True} if stream else {}

    async def run(prompt: str) -> str:
        items: list[Any] = [{"role": "user", "content": prompt}]
        while True:
            payload, sse = await pool.post(
                "/responses", {"model": model, "input": items, "tools": tools, "store": False, **extra}
            )
            output = _responses_stream(payload) if sse else orjson.loads(payload)["output"]
            calls = [o for o in output if o["type"] == "function_call"]
            if not calls:
                return "".join(p["text"] for o in output if o["type"] == "message" for p in o["content"])
            items += output
            results = await run_calls(tool, [orjson.loads(c["arguments"]) for c in calls])
            items += [
                {"type": "function_call_output", "call_id": c["call_id"], "output": str(r)}
                for c, r in zip(calls, results, strict=True)
            ]

    return run, pool


def _responses_stream(payload: bytes) -> list[Any]:
    """The output items, put together from the deltas (text and arguments) of the event stream."""
    items: dict[int, Any] = {}
    pieces: dict[int, list[str]] = {}
    for ev in events(payload):
        kind = ev["type"]
        if kind == "response.output_text.delta" or kind == "response.function_call_arguments.delta":
            pieces[ev["output_index"]].append(ev["delta"])
        elif kind == "response.output_item.added":
            items[ev["output_index"]] = ev["item"]
            pieces[ev["output_index"]] = []
    output = []
    for index, item in items.items():
        joined = "".join(pieces[index])
        if item["type"] == "function_call":
            output.append({**item, "arguments": joined, "status": "completed"})
        else:
            part = {"type": "output_text", "text": joined, "annotations": []}
            output.append({**item, "content": [part], "status": "completed"})
    return output


# ---------------------------------------------------------------- Anthropic Messages


def anthropic(base_url: str, model: str, tool: Tool, stream: bool) -> tuple[Conversation, Pool]:
    headers = {"content-type": "application/json", "x-api-key": "mock", "anthropic-version": "2023-06-01"}
    pool = Pool(base_url, headers)
    tools = [{"name": "add", "description": tool.__doc__, "input_schema": PARAMS}]
    extra = {"stream": True} if stream else {}

    async def run(prompt: str) -> str:
        messages: list[Any] = [{"role": "user", "content": prompt}]
        while True:
            body = {"model": model, "max_tokens": 8192, "messages": messages, "tools": tools, **extra}
            payload, sse = await pool.post("/v1/messages", body)
            blocks = _anthropic_stream(payload) if sse else orjson.loads(payload)["content"]
            calls = [b for b in blocks if b["type"] == "tool_use"]
            if not calls:
                return "".join(b["text"] for b in blocks if b["type"] == "text")
            messages.append({"role": "assistant", "content": blocks})
            results = await run_calls(tool, [c["input"] for c in calls])
            answers = [
                {"type": "tool_result", "tool_use_id": c["id"], "content": str(r)}
                for c, r in zip(calls, results, strict=True)
            ]
            messages.append({"role": "user", "content": answers})

    return run, pool


def _anthropic_stream(payload: bytes) -> list[Any]:
    blocks: list[Any] = []
    pieces: list[list[str]] = []
    for ev in events(payload):
        kind = ev["type"]
        if kind == "content_block_delta":
            delta = ev["delta"]
            pieces[ev["index"]].append(delta["text"] if delta["type"] == "text_delta" else delta["partial_json"])
        elif kind == "content_block_start":
            blocks.append(ev["content_block"])
            pieces.append([])
    for block, parts in zip(blocks, pieces, strict=True):
        if block["type"] == "text":
            block["text"] = "".join(parts)
        elif block["type"] == "tool_use":
            block["input"] = orjson.loads("".join(parts) or "{}")
    return blocks


# ---------------------------------------------------------------- Gemini


def gemini(base_url: str, model: str, tool: Tool, stream: bool) -> tuple[Conversation, Pool]:
    pool = Pool(base_url, {"content-type": "application/json", "x-goog-api-key": "mock"})
    tools = [{"functionDeclarations": [{"name": "add", "description": tool.__doc__, "parameters": PARAMS}]}]
    path = f"/v1beta/models/{model}:" + ("streamGenerateContent?alt=sse" if stream else "generateContent")

    async def run(prompt: str) -> str:
        contents: list[Any] = [{"role": "user", "parts": [{"text": prompt}]}]
        while True:
            payload, sse = await pool.post(path, {"contents": contents, "tools": tools})
            parts = _gemini_stream(payload) if sse else orjson.loads(payload)["candidates"][0]["content"]["parts"]
            calls = [p["functionCall"] for p in parts if "functionCall" in p]
            if not calls:
                return "".join(p.get("text", "") for p in parts)
            contents.append({"role": "model", "parts": parts})
            results = await run_calls(tool, [c["args"] for c in calls])
            answers = [
                {"functionResponse": {"name": c["name"], "response": {"result": r}}}
                for c, r in zip(calls, results, strict=True)
            ]
            contents.append({"role": "user", "parts": answers})

    return run, pool


def _gemini_stream(payload: bytes) -> list[Any]:
    """The parts of every chunk, consecutive text parts joined."""
    parts: list[Any] = []
    for chunk in events(payload):
        for part in chunk["candidates"][0]["content"]["parts"]:
            if "text" in part and parts and "text" in parts[-1] and len(part) == 1:
                parts[-1] = {"text": parts[-1]["text"] + part["text"]}
            else:
                parts.append(part)
    return parts


FLOORS = {"openai_chat": openai_chat, "openai_responses": openai_responses, "anthropic": anthropic, "gemini": gemini}
