"""Web fixtures: ``tooloop web`` as a real subprocess, headless Chromium from the system driven by
Playwright (never a downloaded browser), stores on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.store.conftest import postgres_server, postgres_url  # noqa: F401  (fixtures reused)

_T = TypeVar("_T")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def run_async(make: Callable[[], Awaitable[_T]]) -> _T:
    """Run a coroutine on a thread of its own (Playwright's sync API owns this thread's loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium (the system's) under Playwright, for one module: Playwright's sync API
    holds an event loop while it runs, which asyncio tests of later modules must not find."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("no chromium on PATH: apt-get install chromium (.ci/run installs it)")
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser page; a failed dialog (``alert``) is recorded on ``page.dialogs``."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.dialogs = []
    opened.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
    opened.set_default_timeout(20_000)
    yield opened
    context.close()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where pages' screenshots go (kept as test artefacts; ``TOOLOOP_WEB_SCREENSHOTS`` names it)."""
    chosen = os.environ.get("TOOLOOP_WEB_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL for each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/sessions.db"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """An SQLite store URL."""
    return f"sqlite:///{tmp_path}/sessions.db"


@dataclass
class WebServer:
    """A running ``tooloop web``: the address it printed, its base URL and token."""

    address: str
    base: str
    token: str | None
    process: subprocess.Popen[str]


def start_web(store: str, folder: Path, *extra: str) -> WebServer:
    """Start ``tooloop web`` on a free port in ``folder`` (where tooloop.toml and tools live)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), *sys.path])}
    env.pop("TOOLOOP_CONFIG", None)
    log = (folder / "web-stderr.log").open("a")
    process = subprocess.Popen(
        [sys.executable, "-m", "tooloop", "web", "--store", store, "--port", "0", *extra],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    log.close()  # the child holds its own copy
    line = _first_line(process)
    found = re.search(r"(http://[^/\s]+)/(\?token=(\S+))?", line)
    if found is None:
        process.kill()
        process.wait()
        assert process.stdout is not None
        process.stdout.close()
        raise AssertionError(f"tooloop web printed {line!r}; stderr: {(folder / 'web-stderr.log').read_text()}")
    return WebServer(found.group(0), found.group(1), found.group(3), process)


def _first_line(process: subprocess.Popen[str]) -> str:
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(process.stdout.readline() if process.stdout else ""))
    reader.start()
    reader.join(60)
    return result[0] if result else ""


@pytest.fixture
def web(tmp_path: Path) -> Iterator[Callable[..., WebServer]]:
    """``web(store_url, *options)`` starts ``tooloop web`` in the test's folder (stopped afterwards)."""
    started: list[WebServer] = []

    def start(store: str, *extra: str) -> WebServer:
        server = start_web(store, tmp_path, *extra)
        started.append(server)
        return server

    yield start
    for server in started:
        server.process.terminate()
        try:
            server.process.wait(10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
        if server.process.stdout is not None:
            server.process.stdout.close()
