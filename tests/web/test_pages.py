"""``tooloop web`` in a real browser: every page, a session clicked through, fork and re-run with an
offline model, a live session written by another process, escaping, the token, a corrupt row."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.store.conftest import execute_raw
from tooloop import Agent
from tooloop.batch import run_many
from tooloop.messages import UserMessage
from tooloop.store import open_store

from ._seed import HOSTILE, add, seed
from .conftest import WebServer, run_async

pytestmark = pytest.mark.timeout(180)
Start = Callable[..., WebServer]


def listed(page: Any) -> list[str]:
    rows = page.locator("#sessions tbody tr[data-session]")
    return list(rows.evaluate_all("rows => rows.map(r => r.dataset.session)"))


def navigate(page: Any, action: Callable[[], Any]) -> None:
    with page.expect_navigation():
        action()


def test_the_sessions_page_lists_sorts_searches_and_filters(
    store_url: str, web: Start, page: Any, screenshots: Path
) -> None:
    run_async(lambda: seed(store_url))
    server = web(store_url)
    page.goto(server.address)
    assert page.url == server.base + "/"  # the token went into a cookie, out of the address bar
    assert set(listed(page)) == {"sum", "essay", "broken", "hostile"}

    navigate(page, lambda: page.click("th a[data-column=tokens]"))
    assert listed(page)[:2] == ["essay", "broken"]  # 4,900 then 70 tokens
    navigate(page, lambda: page.click("th a[data-column=tokens]"))
    assert listed(page)[-1] == "essay"
    page.screenshot(path=str(screenshots / f"sessions-{store_url.partition(':')[0]}.png"), full_page=True)

    page.fill("#search", "lighthouses")
    navigate(page, lambda: page.press("#search", "Enter"))
    assert listed(page) == ["essay"]
    page.fill("#search", "")
    page.select_option("#stop-filter", "max_tokens")
    navigate(page, lambda: page.click("form.filters button"))
    assert listed(page) == ["essay"]
    page.select_option("#stop-filter", "")
    page.check("#errors-filter")
    navigate(page, lambda: page.click("form.filters button"))
    assert listed(page) == ["broken"]
    page.uncheck("#errors-filter")
    page.fill("#model-filter", "test:big")
    navigate(page, lambda: page.click("form.filters button"))
    assert listed(page) == ["essay"]


def test_a_session_shows_markdown_collapsed_thinking_tool_cards_and_a_waterfall(
    sqlite_url: str, web: Start, page: Any, screenshots: Path
) -> None:
    run_async(lambda: seed(sqlite_url))
    server = web(sqlite_url)
    page.goto(server.address)
    navigate(page, lambda: page.click("#sessions a[href='/s/sum']"))
    assert page.locator(".entry.user .markdown strong").inner_text() == "two plus three"
    card = page.locator(".entry.tool_call .card")
    assert card.locator(".tool-name").inner_text() == "add"
    assert card.locator(".status").inner_text() == "ok"
    assert json.loads(card.locator(".arguments pre").inner_text()) == {"a": 1, "b": 1}
    assert "You said" in page.locator(".entry.assistant .markdown").inner_text()
    bars = page.locator("#waterfall rect.wf-bar")
    assert bars.count() >= 2  # the model requests and the tool call
    assert page.locator("#waterfall rect.wf-bar.tool").count() == 1
    page.screenshot(path=str(screenshots / "session.png"), full_page=True)

    page.goto(server.base + "/s/essay")
    thinking = page.locator("details.thinking")
    assert thinking.get_attribute("open") is None and not page.get_by_text("plan three parts").is_visible()
    thinking.locator("summary").click()
    assert page.get_by_text("plan three parts").is_visible()
    assert page.locator("#stop-reason").inner_text() == "max_tokens"
    assert "$0.0420" in page.locator("#totals").inner_text()


def test_hostile_stored_text_shows_as_text_and_never_runs(
    sqlite_url: str, web: Start, page: Any, screenshots: Path
) -> None:
    run_async(lambda: seed(sqlite_url))
    server = web(sqlite_url)
    page.goto(server.address)
    response = page.goto(server.base + "/s/hostile")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert HOSTILE in page.locator(".entry.tool_call .result").inner_text()
    assert HOSTILE in page.locator(".entry.user").inner_text()
    assert "<img src=x onerror=alert(2)>" in page.locator(".entry.tool_call .arguments").inner_text()
    assert page.evaluate("() => window.pwned") is None
    assert page.locator("img, iframe, main script").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0  # the Markdown link is refused
    page.goto(server.base + "/?q=hostile")
    assert HOSTILE in page.locator("#sessions").inner_text()
    assert page.evaluate("() => window.pwned") is None
    assert page.dialogs == []
    page.screenshot(path=str(screenshots / "hostile.png"), full_page=True)


def _status(url: str, *, method: str = "GET", headers: dict[str, str] | None = None, body: bytes | None = None) -> int:
    request = urllib.request.Request(url, method=method, headers=headers or {}, data=body)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_every_request_needs_the_token_unless_no_token_is_asked_for(sqlite_url: str, web: Start) -> None:
    run_async(lambda: seed(sqlite_url))
    server = web(sqlite_url)
    assert server.token is not None and len(server.token) >= 24
    for path in ("/", "/s/sum", "/s/sum/live", "/s/sum/events", "/static/app.js", "/compare?a=sum&b=essay", "/batch"):
        assert _status(server.base + path) == 403, path
        assert _status(server.base + path + ("&" if "?" in path else "?") + "token=wrong") == 403, path
    fork = {"Content-Type": "application/x-www-form-urlencoded"}
    assert _status(server.base + "/s/sum/fork", method="POST", headers=fork, body=b"at=1") == 403
    assert _status(server.base + "/", headers={"x-tooloop-token": server.token}) == 200
    evil = {"x-tooloop-token": server.token, "Host": "attacker.example"}
    assert _status(server.base + "/", headers=evil) == 400  # a rebound DNS name is refused
    sessions = run_async(lambda: _session_ids(sqlite_url))
    assert sessions == {"sum", "essay", "broken", "hostile"}  # the refused POST forked nothing

    open_server = web(sqlite_url, "--no-token")
    assert open_server.token is None and "token" not in open_server.address
    assert _status(open_server.base + "/s/sum") == 200


async def _session_ids(url: str) -> set[str]:
    async with open_store(url) as store:
        return {info.id for info in await store.search(limit=100)}


def test_a_corrupt_row_is_shown_and_the_rest_of_the_store_still_lists(
    store_url: str, web: Start, page: Any, screenshots: Path
) -> None:
    run_async(lambda: seed(store_url))
    execute_raw(store_url, "UPDATE tooloop_sessions SET usage = ? WHERE id = ?", ("{torn", "essay"))
    execute_raw(
        store_url, "UPDATE tooloop_messages SET data = ? WHERE session_id = ? AND seq = ?", ("{torn", "broken", 1)
    )
    server = web(store_url)
    page.goto(server.address)
    assert set(listed(page)) == {"sum", "essay", "broken", "hostile"}
    damaged = page.locator("#sessions tr.damaged")
    assert damaged.get_attribute("data-session") == "essay"
    assert "usage cannot be read" in damaged.locator(".problem").inner_text()
    page.goto(server.base + "/s/broken")
    assert "message 1 (seq=1) cannot be read" in page.locator("#problem").inner_text()
    assert page.locator(".entry.user").inner_text().count("fetch the report") == 1  # what could be read
    page.screenshot(path=str(screenshots / f"corrupt-{store_url.partition(':')[0]}.png"), full_page=True)


TOOLS = '''
from tooloop import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(requires_approval=True)
def remove_file(path: str) -> str:
    """Remove a file (asks a person first)."""
    return f"removed {path}"
'''

CONFIG = """
[agents.helper]
model = "test:echo"
tools = ["webtools:add", "webtools:remove_file"]
"""


def test_fork_and_rerun_from_a_message_with_approvals_answered_in_the_page(
    store_url: str, web: Start, page: Any, screenshots: Path, tmp_path: Path
) -> None:
    (tmp_path / "webtools.py").write_text(textwrap.dedent(TOOLS))
    (tmp_path / "tooloop.toml").write_text(CONFIG)
    run_async(lambda: seed(store_url))
    server = web(store_url)
    page.goto(server.address)
    page.goto(server.base + "/s/sum")
    first = page.locator("#m0")
    first.locator("details.fork summary").click()
    first.locator("textarea[name=prompt]").fill("What is four plus five?")
    first.locator("select[name=agent]").select_option("helper")
    first.locator("input[name=model]").fill("test:tools")  # another model than the agent's
    page.screenshot(path=str(screenshots / "fork-form.png"), full_page=True)
    navigate(page, lambda: first.locator("button[type=submit]").click())
    new_id = page.url.rsplit("/", 1)[1]
    assert new_id != "sum"

    approvals = page.locator("#approvals")
    approvals.wait_for()  # the run stops for remove_file; the page shows it live
    assert approvals.locator("legend").inner_text().startswith("remove_file")
    assert page.locator("#parent a").first.get_attribute("href") == "/s/sum"
    page.screenshot(path=str(screenshots / "approval.png"), full_page=True)
    navigate(page, lambda: page.click("#answer"))
    answer = page.locator(".entry.assistant .markdown", has_text="You said: What is four plus five?")
    answer.wait_for()
    assert "remove_file -> removed" in answer.inner_text()
    page.locator("#run-state", has_text="finished").wait_for()
    decided = page.locator(".entry.tool_call", has=page.locator(".tool-name", has_text="remove_file"))
    assert decided.locator(".approval.approved").inner_text().startswith("Approved after ")  # the decision shows
    plain = page.locator(".entry.tool_call", has=page.get_by_text("add", exact=True))
    assert plain.count() >= 1 and plain.locator(".approval.approved").count() == 0  # no decision was asked
    page.screenshot(path=str(screenshots / "rerun.png"), full_page=True)

    navigate(page, lambda: page.click("#compare-parent"))
    rows = page.locator("#compare tbody tr")
    assert rows.first.get_attribute("class") == "differs"  # the prompt was changed
    assert "four plus five" in rows.first.inner_text() and "two plus three" in rows.first.inner_text()
    assert page.locator("#compare tr.differs").count() >= 2
    page.screenshot(path=str(screenshots / "compare.png"), full_page=True)
    parent = run_async(lambda: _texts(store_url, "sum"))
    assert parent[0] == "What is **two plus three**? Use the tool."  # the parent is untouched
    fork = run_async(lambda: _info(store_url, new_id))
    assert (fork.model, fork.metadata["agent"], fork.metadata["agent_model"]) == ("test:tools", "helper", "test:tools")
    assert fork.metadata["forked_from"] == {"session_id": "sum", "at": 0}


async def _info(url: str, session_id: str) -> Any:
    async with open_store(url) as store:
        return await store.get_session(session_id)


async def _texts(url: str, session_id: str) -> list[str]:
    async with open_store(url) as store:
        return [getattr(m, "text", "") for m in await store.load(session_id)]


def test_a_session_updates_live_while_another_process_writes_it(
    store_url: str, web: Start, page: Any, screenshots: Path, tmp_path: Path
) -> None:
    async def begin() -> None:
        async with open_store(store_url) as store:
            await store.append("live", [UserMessage("Run the slow tool")])

    run_async(begin)
    server = web(store_url)
    page.goto(server.address)
    page.goto(server.base + "/s/live")
    page.evaluate("() => { window.sameDocument = 42 }")
    script = str(Path(__file__).with_name("live_writer.py"))
    writer = subprocess.Popen([sys.executable, script, store_url, "live", "1.5", str(tmp_path)])
    try:
        page.locator(".entry.tool_call .approval.running").wait_for()  # the call started, no outcome yet
        page.screenshot(path=str(screenshots / "live-running.png"), full_page=True)
        (tmp_path / "go").touch()  # the writer ends the call only now: the page had it running
        page.locator(".entry.tool_call .result", has_text="slow result").wait_for()
        page.locator(".entry.assistant", has_text="All done").wait_for()
    finally:
        (tmp_path / "go").touch()
        assert writer.wait(30) == 0
    assert page.evaluate("() => window.sameDocument") == 42  # updated in place, never reloaded
    assert page.locator("#message-count").inner_text() == "3"
    assert page.locator("#waterfall rect.wf-bar.tool").count() == 1
    page.screenshot(path=str(screenshots / "live-done.png"), full_page=True)


def test_batch_results_show_stop_reasons_rewards_and_open_each_conversation(
    web: Start, page: Any, screenshots: Path, tmp_path: Path, sqlite_url: str
) -> None:
    results = tmp_path / "results.jsonl"
    items = [{"id": f"q{n}", "prompt": f"question {n}", "metadata": {"reward": n / 4}} for n in range(5)]
    run_async(lambda: run_many(Agent("test:echo", tools=[add]), items, results=results))
    with results.open("a") as file:
        file.write("{this line was cut\n")
    server = web(sqlite_url)
    page.goto(server.address)
    page.goto(server.base + "/batch")
    page.fill("input[name=path]", results.name)  # relative to the folder the server runs in
    navigate(page, lambda: page.click("form.filters button"))
    assert page.locator("#batch-count").inner_text() == "5"
    assert "end_turn" in page.locator("#stop-reasons").inner_text()
    assert page.locator("#rewards tr").count() == 10
    assert page.get_by_text("line 6 cannot be read").is_visible()
    page.screenshot(path=str(screenshots / "batch.png"), full_page=True)
    navigate(page, lambda: page.locator("#slowest a").first.click())
    assert "You said: question" in page.locator(".entry.assistant").inner_text()


def test_a_long_session_opens_one_page_at_a_time(sqlite_url: str, web: Start, page: Any) -> None:
    async def long() -> None:
        async with open_store(sqlite_url) as store:
            await store.append("long", [UserMessage(f"message number {n}") for n in range(450)])

    run_async(long)
    server = web(sqlite_url)
    page.goto(server.address)
    page.goto(server.base + "/s/long")
    assert page.locator(".timeline .entry").count() == 200
    navigate(page, lambda: page.click("nav.pages a:text('last')"))
    entries = page.locator(".timeline .entry")
    assert entries.count() == 50
    assert entries.first.get_attribute("data-pos") == "400"
    assert "message number 449" in entries.last.inner_text()
