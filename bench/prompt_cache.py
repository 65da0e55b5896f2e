"""What prompt caching and tool search save: a 30-turn conversation with 50 tools, billed.

A local server speaks the Anthropic Messages API and simulates its prefix cache: a request's
prompt is read in Anthropic's order (tools, system, messages), block by block; a prefix ending at
a ``cache_control`` breakpoint is written to the cache (five minutes), and the longest prefix of a
later request already in the cache is read from it. Tokens are estimated at four characters each.
The scripted model calls a tool on every turn (searching first when it has ``search_tools``), so
the conversation is the same in every configuration; only what the requests carry changes.

With the provider's own tool search (``ToolSearch(mode="native")``) the server also plays
Anthropic's tool search tool: deferred tools are left out of the prompt, the scripted model
searches in the same response as its call (``server_tool_use`` and ``tool_search_tool_result``),
and the tools a result references are read where the result stands in the conversation, as
Anthropic expands them; the tool list itself never changes.

    python bench/prompt_cache.py            # the table, per configuration
    python bench/prompt_cache.py --turns    # and the cached share of every request

Not a timed test: it prints token counts and what they cost at claude-sonnet-4-5's list price
(priced by tooloop, the figure of ``RunResult.usage.cost``).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tooloop import Agent, Limits, ToolSearch
from tooloop.models import get_model
from tooloop.models.base import ModelSettings
from tooloop.tools.tool import Tool

TURNS = 30
TOOLS = 50
WORDS = "inventory shipment invoice customer warehouse supplier order refund ledger audit".split()


def _tools() -> list[Tool]:
    tools = []
    for i in range(TOOLS):
        topic = WORDS[i % len(WORDS)]
        description = (
            f"Look up {topic} records of region {i}: returns the matching {topic} entries with their ids, "
            f"dates, amounts and status. Use it when the user asks about a {topic} in region {i}; it "
            "never changes data. Results are paginated; pass page to read further pages. " * 2
        )
        schema = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": f"What to look for among {topic} records"},
                "page": {"type": "integer", "description": "Page number, from 1", "default": 1},
            },
            "required": ["query"],
        }

        async def run(query: str, page: int = 1, _topic: str = topic) -> str:
            return f"{_topic} results for {query!r}, page {page}: " + "; ".join(
                f"#{n} {_topic} 2026-0{1 + n % 9}-1{n % 10} amount {n * 37}.50 status open" for n in range(12)
            )

        tools.append(Tool(name=f"{topic}_region_{i}", description=description, parameters=schema, function=run))
    return tools


SYSTEM = "You are the operations assistant of a logistics company. " + (
    "Answer from the tools' results only, cite record ids, and say when a record is missing. " * 12
)


@dataclass
class PrefixCache:
    """Anthropic-like: prefixes ending at a breakpoint are written; the longest known prefix is read."""

    entries: set[str] = field(default_factory=set)
    per_request: list[tuple[int, int, int]] = field(default_factory=list)
    """(read, written, uncached) input tokens of every request."""

    def bill(self, body: dict[str, Any]) -> tuple[int, int, int]:
        blocks = _blocks(body)
        digest = hashlib.sha256()
        prefixes: list[tuple[str, int, bool]] = []  # (hash, tokens so far, breakpoint here)
        tokens = 0
        for text, marked in blocks:
            digest.update(text.encode())
            tokens += max(1, len(text) // 4)
            prefixes.append((digest.copy().hexdigest(), tokens, marked))
        read = max((t for h, t, _ in prefixes if h in self.entries), default=0)
        last_mark = max((t for _, t, m in prefixes if m), default=0)
        for h, _, marked in prefixes:
            if marked:
                self.entries.add(h)
        written = max(0, last_mark - read)
        uncached = tokens - read - written
        self.per_request.append((read, written, uncached))
        return read, written, uncached


def _blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The prompt's blocks in the order Anthropic reads them, without their markers."""
    out: list[tuple[str, bool]] = []

    def add(block: Any) -> None:
        marked = isinstance(block, dict) and "cache_control" in block
        plain = {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block
        out.append((json.dumps(plain, sort_keys=True), marked))

    tools = {t["name"]: t for t in body.get("tools", [])}
    for tool in tools.values():
        if not tool.get("defer_loading"):  # deferred tools are not in the prompt until a search loads them
            add(tool)
    system = body.get("system")
    for block in system if isinstance(system, list) else ([{"type": "text", "text": system}] if system else []):
        add(block)
    for message in body["messages"]:
        out.append((message["role"], False))
        for block in message["content"]:
            add(block)
            for name in _referenced(block):  # the definitions a search loaded, read where it stands
                out.append((json.dumps(tools[name], sort_keys=True), False))
    return out


def _referenced(block: Any) -> list[str]:
    if not isinstance(block, dict) or block.get("type") != "tool_search_tool_result":
        return []
    return [r["tool_name"] for r in block["content"]["tool_references"]]


def _native_answer(body: dict[str, Any], turn: int) -> list[dict[str, Any]]:
    """The scripted model with Anthropic's tool search: it searches and calls in one response."""
    tools = body["tools"]
    if turn == 1 or turn == TURNS // 2:
        topic = WORDS[(turn // 3) % len(WORDS)]
        found = [t["name"] for t in tools if t.get("defer_loading") and t["name"].startswith(topic)][:5]
        use = {
            "type": "server_tool_use",
            "id": f"srvtoolu_{turn:02d}",
            "name": "tool_search_tool_bm25",
            "input": {"query": f"{topic} records"},
        }
        references = [{"type": "tool_reference", "tool_name": name} for name in found]
        result = {
            "type": "tool_search_tool_result",
            "tool_use_id": use["id"],
            "content": {"type": "tool_search_tool_search_result", "tool_references": references},
        }
        call = {"name": found[0], "input": {"query": f"item {turn}", "page": 1 + turn % 3}}
        return [use, result, {"type": "text", "text": f"Checking step {turn}."}, _use(turn, call)]
    loaded = [t["name"] for t in tools if "type" not in t and not t.get("defer_loading")]
    for message in body["messages"]:
        for block in message["content"]:
            loaded += _referenced(block)
    call = {"name": loaded[turn % len(loaded)], "input": {"query": f"item {turn}", "page": 1 + turn % 3}}
    return [{"type": "text", "text": f"Checking step {turn}."}, _use(turn, call)]


def _use(turn: int, call: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{turn:02d}", **call}


def _answer(body: dict[str, Any], turn: int) -> dict[str, Any]:
    """The scripted model: a tool call per turn (searching first when it can), then a last answer."""
    names = [t["name"] for t in body.get("tools", [])]
    if turn >= TURNS:
        content: list[dict[str, Any]] = [{"type": "text", "text": "All records checked; nothing is missing."}]
        return _message(content, "end_turn")
    if "tool_search_tool_bm25" in names:
        return _message(_native_answer(body, turn), "tool_use")
    searching = "search_tools" in names
    if searching and (turn == 1 or turn == TURNS // 2):
        topic = WORDS[(turn // 3) % len(WORDS)]
        call = {"name": "search_tools", "input": {"query": f"{topic} records"}}
    else:
        usable = [n for n in names if n != "search_tools"]
        call = {"name": usable[turn % len(usable)], "input": {"query": f"item {turn}", "page": 1 + turn % 3}}
    block = {"type": "tool_use", "id": f"toolu_{turn:02d}", **call}
    return _message([{"type": "text", "text": f"Checking step {turn}."}, block], "tool_use")


def _message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {},
    }


class Provider:
    """The local Anthropic server with its prefix cache."""

    def __init__(self) -> None:
        self.cache = PrefixCache()
        self.turn = 0
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                provider.turn += 1
                read, written, uncached = provider.cache.bill(body)
                reply = _answer(body, provider.turn)
                reply["usage"] = {
                    "input_tokens": uncached,
                    "cache_read_input_tokens": read,
                    "cache_creation_input_tokens": written,
                    "output_tokens": 40,
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"


CONFIGS = {
    "no cache, all tools": (ModelSettings(max_tokens=1024, cache="off"), None),
    "cache, all tools": (ModelSettings(max_tokens=1024), None),
    "no cache, tool search": (ModelSettings(max_tokens=1024, cache="off"), ToolSearch(mode="local")),
    "cache + tool search": (ModelSettings(max_tokens=1024), ToolSearch(mode="local")),
    "cache + native search": (ModelSettings(max_tokens=1024), ToolSearch(mode="native")),
}


async def run(name: str) -> tuple[Any, PrefixCache]:
    settings, search = CONFIGS[name]
    provider = Provider()
    model = get_model("anthropic:claude-sonnet-4-5", base_url=provider.url, api_key="bench", max_retries=0)
    try:
        agent = Agent(
            model,
            system=SYSTEM,
            tools=_tools(),
            settings=settings,
            tool_search=search,
            limits=Limits(max_turns=TURNS + 5, max_repeats=None),
        )
        result = await agent.run("Check every open record of this week and tell me what is missing.")
    finally:
        await model.aclose()  # type: ignore[attr-defined]
        provider.server.shutdown()
    return result, provider.cache


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", action="store_true", help="print the cached share of every request")
    args = parser.parse_args()
    print(f"{TURNS}-turn conversation, {TOOLS} tools, Anthropic-like prefix cache (tokens: chars/4)\n")
    header = f"{'configuration':24} {'requests':>8} {'input':>9} {'read':>9} {'written':>9} {'uncached':>9}"
    print(header + f" {'billed*':>9} {'cost $':>8}")
    shares: dict[str, list[float]] = {}
    for name in CONFIGS:
        result, cache = await run(name)
        usage = result.usage
        fresh = usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens
        billed = fresh + 1.25 * usage.cache_write_tokens + 0.1 * usage.cache_read_tokens + usage.output_tokens * 5
        cost = f"{usage.cost:.4f}" if usage.cost is not None else "unknown"
        print(
            f"{name:24} {usage.requests:>8} {usage.input_tokens:>9,} {usage.cache_read_tokens:>9,} "
            f"{usage.cache_write_tokens:>9,} {fresh:>9,} {billed:>9,.0f} {cost:>8}"
        )
        shares[name] = [r / (r + w + u) if r + w + u else 0.0 for r, w, u in cache.per_request]
    print("\n* billed: input-token equivalents at Anthropic's multipliers (write 1.25x, read 0.1x, output 5x)")
    if args.turns:
        print("\ncached share of each request's input (%):")
        for name, values in shares.items():
            print(f"{name:24} " + " ".join(f"{100 * v:3.0f}" for v in values))


if __name__ == "__main__":
    asyncio.run(main())
