"""A running tool's progress shown live while another process runs it, with no polling storm."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tooloop.messages import UserMessage
from tooloop.store import open_store

from .conftest import WebServer, run_async

pytestmark = pytest.mark.timeout(180)
Start = Callable[..., WebServer]


def test_a_running_tools_progress_updates_live_in_the_page(
    store_url: str, web: Start, page: Any, screenshots: Path, tmp_path: Path
) -> None:
    async def begin() -> None:
        async with open_store(store_url) as store:
            await store.append("crunching", [UserMessage("Before we start")])

    run_async(begin)
    server = web(store_url)
    page.goto(server.address)
    fetches: list[str] = []
    page.on("request", lambda request: fetches.append(request.url) if "/live" in request.url else None)
    page.goto(server.base + "/s/crunching")
    page.evaluate("() => { window.sameDocument = 42 }")
    script = str(Path(__file__).with_name("progress_writer.py"))
    writer = subprocess.Popen([sys.executable, script, store_url, "crunching", str(tmp_path)])
    text = page.locator(".entry.tool_call .progress .progress-text")
    try:
        page.locator(".entry.tool_call .approval.running").wait_for()  # started, nothing reported yet
        (tmp_path / "go-1").touch()
        page.locator(".entry.tool_call .progress", has_text="crunching part 1").wait_for()
        assert text.inner_text() == "1 of 3 · crunching part 1"
        assert page.locator(".entry.tool_call progress").get_attribute("value") == "1.0"

        quiet = len(fetches)
        time.sleep(1.5)  # the call runs and reports nothing: the page asks for nothing either
        assert len(fetches) == quiet

        (tmp_path / "go-2").touch()
        page.locator(".entry.tool_call .progress", has_text="crunching part 2").wait_for()
        (tmp_path / "go-3").touch()
        page.locator(".entry.tool_call .progress", has_text="crunching part 3").wait_for()
        assert text.inner_text() == "3 of 3 · crunching part 3"
        page.screenshot(path=str(screenshots / "live-progress.png"), full_page=True)
        (tmp_path / "go-done").touch()
        page.locator(".entry.tool_call .result", has_text="crunched 3 parts").wait_for()
        page.locator(".entry.assistant", has_text="All crunched.").wait_for()
    finally:
        (tmp_path / "go-done").touch()
        assert writer.wait(60) == 0
    assert page.locator(".progress").count() == 0  # the outcome replaced the progress
    assert page.evaluate("() => window.sameDocument") == 42  # updated in place, never reloaded
    assert len(fetches) < 20  # one fragment per change of the session, not a stream of polls
