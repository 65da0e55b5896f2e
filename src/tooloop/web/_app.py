"""The Starlette application behind ``tooloop web``: pages over a store, live, fork and re-run."""

from __future__ import annotations

import asyncio
import contextlib
import math
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from itertools import zip_longest
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ArgumentValueError, ConfigurationError, CorruptDataError, SessionNotFoundError, StoreError
from ..messages import Message as ChatMessage
from ..messages import StopReason, ToolCallMessage, ToolCallStatus, Usage
from ..store import BaseStore, open_store
from ..store.base import SESSION_ORDERS
from ._batch import read_batch, transcript_of
from ._live import Watchers
from ._markdown import render_markdown
from ._runs import Runs
from ._timeline import PAGE_SIZE, build_entries, build_waterfall, message_summary, pretty_json, requests_of, same

__all__ = ["create_app", "new_token"]

_HERE = Path(__file__).parent
_LIST_PAGE = 50
_COMPARE_LIMIT = 1000
_SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


def new_token() -> str:
    """A random token for the URL the server prints."""
    return secrets.token_urlsafe(24)


class _Guard:
    """Every request needs the token (from the printed URL, then a cookie) and a known Host;
    every response gets headers that forbid inline scripts, framing and sniffing."""

    def __init__(self, app: ASGIApp, token: str | None, hosts: frozenset[str] | None):
        self.app = app
        self.token = token
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self._refusal(request)
        if refusal is not None:
            await refusal(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, secured)

    def _refusal(self, request: Request) -> Response | None:
        host = _host(request.headers.get("host", ""))
        if self.hosts is not None and host not in self.hosts:
            return PlainTextResponse(f"unknown host {host!r}: open the address tooloop web printed", status_code=400)
        if self.token is None:
            return None
        cookie = f"tooloop_token_{request.url.port or 0}"
        given = request.query_params.get("token")
        if given is not None and secrets.compare_digest(given.encode(), self.token.encode()):
            if request.method != "GET":
                return None
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            redirect = RedirectResponse(target, status_code=303)
            redirect.set_cookie(cookie, self.token, httponly=True, samesite="strict", path="/")
            return redirect
        for candidate in (request.cookies.get(cookie), request.headers.get("x-tooloop-token")):
            if candidate is not None and secrets.compare_digest(candidate.encode(), self.token.encode()):
                return None
        return HTMLResponse(
            "<!doctype html><title>tooloop web: token needed</title><h1>Token needed</h1>"
            "<p>This tooloop web server answers only with its token: open the full address it printed "
            "when it started (it ends with <code>?token=...</code>).</p>",
            status_code=403,
        )


@dataclass
class _Web:
    store: BaseStore
    owns_store: bool
    templates: jinja2.Environment
    watchers: Watchers
    runs: Runs

    def page(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        return HTMLResponse(self.templates.get_template(name).render(**values), status_code=status)

    def problem(self, message: str, status: int = 400) -> HTMLResponse:
        return self.page("problem.html", status, message=message)


def _host(header: str) -> str:
    """The name in a Host header, without its port (``[::1]:8000`` gives ``[::1]``)."""
    if header.startswith("["):
        return header.partition("]")[0] + "]"
    return header.rpartition(":")[0] if ":" in header else header


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = render_markdown
    env.filters["pretty"] = pretty_json
    env.filters["when"] = _when
    env.filters["seconds"] = _seconds
    env.filters["money"] = _money
    env.filters["usage_sum"] = _usage_sum
    env.filters["summary"] = message_summary
    env.globals["PENDING"] = ToolCallStatus.PENDING
    return env


def _when(value: datetime | None) -> str:
    return "" if value is None else value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _money(value: Decimal | None) -> str:
    if value is None:
        return ""
    return f"${value:.4f}" if value >= Decimal("0.01") or not value else f"${value:.6f}"  # one request costs little


def _usage_sum(requests: Any) -> Usage:
    return sum((r.usage for r in requests), Usage())


def _int(value: str | None, default: int, low: int = 0) -> int:
    try:
        return max(low, int(value)) if value is not None and value != "" else default
    except ValueError:
        return default


Handler = Callable[[_Web, Request], Awaitable[Response]]


def create_app(
    store: str | BaseStore, *, token: str | None, config: Path | None = None, hosts: frozenset[str] | None = _LOOPBACK
) -> ASGIApp:
    """The web app over ``store`` (a URL or an open store).

    ``token`` is required by every request (``None`` turns the check off); ``hosts`` are the Host
    names it answers (``None``: any, for a server bound beyond this machine); ``config`` is the
    ``tooloop.toml`` whose agents fork and re-run (found as usual when not given).
    """
    opened = open_store(store) if isinstance(store, str) else store
    runs = Runs(opened, config)
    web = _Web(opened, isinstance(store, str), _environment(), Watchers(opened, local=runs.mark), runs)

    def route(path: str, handler: Handler, methods: tuple[str, ...] = ("GET",)) -> Route:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(web, request)
            except SessionNotFoundError as exc:
                return web.problem(str(exc), 404)
            except (ArgumentValueError, ConfigurationError, CorruptDataError) as exc:
                return web.problem(str(exc))
            except StoreError as exc:  # the database is unreachable or unreadable: say so, keep serving
                return web.problem(f"the store cannot be read: {exc}", 503)

        return Route(path, endpoint, methods=list(methods))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await web.runs.close()
            await web.watchers.close()
            if web.owns_store:
                await web.store.close()

    app = Starlette(
        routes=[
            route("/", _sessions),
            route("/s/{sid}", _session),
            route("/s/{sid}/live", _live_fragment),
            route("/s/{sid}/events", _events),
            route("/s/{sid}/fork", _fork, ("POST",)),
            route("/s/{sid}/approve", _approve, ("POST",)),
            route("/compare", _compare),
            route("/batch", _batch),
            route("/batch/item", _batch_item),
            Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
        ],
        lifespan=lifespan,
    )
    return _Guard(app, token, hosts)


async def _sessions(web: _Web, request: Request) -> Response:
    params = request.query_params
    order = params.get("order") or "updated"
    if order not in SESSION_ORDERS:
        return web.problem(f"cannot sort by {order!r}; choose one of {', '.join(SESSION_ORDERS)}")
    page = _int(params.get("page"), 1, 1)
    query = {
        "q": params.get("q", ""),
        "model": params.get("model", ""),
        "stop": params.get("stop", ""),
        "errors": "on" if params.get("errors") else "",
        "order": order,
        "dir": "asc" if params.get("dir") == "asc" else "desc",
    }
    started = time.perf_counter()
    found = await web.store.search(
        query["q"],
        model=query["model"] or None,
        stop_reason=query["stop"] or None,
        errors_only=bool(query["errors"]),
        order_by=order,
        descending=query["dir"] == "desc",
        limit=_LIST_PAGE + 1,
        offset=(page - 1) * _LIST_PAGE,
    )
    elapsed = time.perf_counter() - started

    def link(**changes: Any) -> str:
        merged = {**query, "page": page, **changes}
        return "/?" + urlencode({k: v for k, v in merged.items() if v not in ("", None)})

    def sort_link(column: str) -> str:
        flip = "asc" if query["order"] == column and query["dir"] == "desc" else "desc"
        return link(order=column, dir=flip, page=1)

    return web.page(
        "sessions.html",
        sessions=found[:_LIST_PAGE],
        query=query,
        page=page,
        has_next=len(found) > _LIST_PAGE,
        link=link,
        sort_link=sort_link,
        stop_reasons=[reason.value for reason in StopReason],
        elapsed=elapsed,
    )


async def _session_view(web: _Web, request: Request) -> dict[str, Any]:
    sid = request.path_params["sid"]
    info = await web.store.get_session(sid)
    (messages, problem), writes, progress = await asyncio.gather(
        _lenient_load(web.store, sid), web.store.writes(sid), web.store.progress(sid)
    )
    pages = max(1, math.ceil(len(messages) / PAGE_SIZE))
    page = min(_int(request.query_params.get("page"), 1, 1), pages)
    start = (page - 1) * PAGE_SIZE
    entries = build_entries(messages[start : start + PAGE_SIZE], writes, start)
    pending = [
        e for e in entries if isinstance(e.message, ToolCallMessage) and e.message.status is ToolCallStatus.PENDING
    ]
    forked = info.metadata.get("forked_from")
    return {
        "info": info,
        "sid": sid,
        "problem": problem,
        "entries": entries,
        "count": len(messages),
        "page": page,
        "pages": pages,
        "page_size": PAGE_SIZE,
        "waterfall": build_waterfall(entries, writes),
        "requests": requests_of(entries),
        "progress": {p.tool_call_id: p for p in progress},
        "pending": pending,
        "run": web.runs.states.get(sid),
        "parent": forked if isinstance(forked, Mapping) else None,
        "agents": web.runs.agent_names(),
        "config_problem": web.runs.config_problem(),
        "can_answer": bool(pending) and isinstance(info.metadata.get("agent"), str),
    }


async def _session(web: _Web, request: Request) -> Response:
    return web.page("session.html", **await _session_view(web, request))


async def _live_fragment(web: _Web, request: Request) -> Response:
    return web.page("_live.html", **await _session_view(web, request))


async def _events(web: _Web, request: Request) -> Response:
    sid = request.path_params["sid"]
    await web.store.get_session(sid)

    async def stream() -> AsyncIterator[str]:
        yield "retry: 2000\n\n"
        async for version in web.watchers.changes(sid):
            yield f"event: changed\ndata: {version}\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"x-accel-buffering": "no"})


async def _fork(web: _Web, request: Request) -> Response:
    sid = request.path_params["sid"]
    form = await request.form()
    at = _int(str(form.get("at", "")), -1)
    agent = str(form.get("agent", "")) or None
    new_id = await web.runs.fork_and_run(
        sid, at, agent=agent, prompt=str(form.get("prompt", "")), model=str(form.get("model", ""))
    )
    return RedirectResponse(f"/s/{new_id}", status_code=303)


async def _approve(web: _Web, request: Request) -> Response:
    sid = request.path_params["sid"]
    form = await request.form()
    decisions = {
        key.removeprefix("decision:"): str(value) == "approve"
        for key, value in form.multi_items()
        if key.startswith("decision:") and str(value) in ("approve", "deny")
    }
    if not decisions:
        return web.problem("choose approve or deny for at least one call")
    await web.runs.answer(sid, decisions)
    return RedirectResponse(f"/s/{sid}", status_code=303)


async def _lenient_load(store: BaseStore, sid: str) -> tuple[list[ChatMessage], str | None]:
    try:
        return list(await store.load(sid)), None
    except CorruptDataError as exc:
        return list(exc.transcript or []), str(exc)


async def _compare(web: _Web, request: Request) -> Response:
    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    if not a or not b:
        return web.page("compare.html", a=a, b=b, rows=None)
    left, right = await web.store.get_session(a), await web.store.get_session(b)
    (first, first_problem), (second, second_problem) = (
        await _lenient_load(web.store, a),
        await _lenient_load(web.store, b),
    )
    rows = [(i, x, y, same(x, y)) for i, (x, y) in enumerate(zip_longest(first, second)) if i < _COMPARE_LIMIT]
    return web.page(
        "compare.html",
        a=a,
        b=b,
        left=left,
        right=right,
        rows=rows,
        problems=[p for p in (first_problem, second_problem) if p],
        differing=sum(1 for row in rows if not row[3]),
        truncated=max(len(first), len(second)) > _COMPARE_LIMIT,
    )


async def _batch(web: _Web, request: Request) -> Response:
    path = request.query_params.get("path", "")
    if not path:
        return web.page("batch.html", path="", batch=None)
    try:
        batch = await asyncio.to_thread(read_batch, path)
    except OSError as exc:
        return web.problem(f"cannot read {path}: {exc.strerror or exc}", 404)
    return web.page("batch.html", path=path, batch=batch)


async def _batch_item(web: _Web, request: Request) -> Response:
    path, item = request.query_params.get("path", ""), request.query_params.get("id", "")
    try:
        batch = await asyncio.to_thread(read_batch, path)
    except OSError as exc:
        return web.problem(f"cannot read {path}: {exc.strerror or exc}", 404)
    record = batch.record(item)
    if record is None:
        return web.problem(f"no conversation {item!r} in {path}", 404)
    messages = transcript_of(record)
    entries = build_entries(messages[: PAGE_SIZE * 5], (), 0)
    return web.page("batch_item.html", path=path, record=record, entries=entries, count=len(messages))
