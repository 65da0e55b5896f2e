"""Logging under the ``tooloop`` logger tree: silent by default, readable when asked, never a key."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.models.openai_wire import completion, plain, tool_call, usage
from tests.support.wire import WireServer
from tooloop import Agent, get_model, tool
from tooloop._logging import set_log_content
from tooloop.models.openai_chat import OpenAIChatModel

SECRET = "sk-secret-never-in-a-log-0123456789"


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: The city.
    """
    return f"{city} is sunny"


@pytest.fixture
def content_logging() -> Iterator[Callable[[bool], None]]:
    yield set_log_content
    set_log_content(False)


@pytest.fixture
def openai_model(wire: WireServer) -> Iterator[OpenAIChatModel]:
    model = get_model("openai:gpt-4.1-mini", base_url=wire.url + "/v1", api_key=SECRET, max_retries=0)
    assert isinstance(model, OpenAIChatModel)
    yield model


def texts(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [f"{r.name} {r.levelname} {r.getMessage()}" for r in caplog.records if r.name.startswith("tooloop")]


def test_the_tooloop_logger_is_silent_by_default() -> None:
    root = logging.getLogger("tooloop")
    assert any(isinstance(h, logging.NullHandler) for h in root.handlers)
    script = "import asyncio, tooloop; print(tooloop.Agent('test:echo').run_sync('hi').text)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLOOP_LOG")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "You said: hi"
    assert done.stderr == ""


async def test_info_logs_runs_requests_and_tool_calls_without_contents(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="tooloop")
    result = await Agent("test:echo", tools=[lookup]).run("secret prompt text")
    lines = texts(caplog)
    assert any(
        line.startswith("tooloop.loop INFO run ") and " started: model=test:echo tools=1" in line for line in lines
    )
    assert any(
        "tooloop.models.test INFO request 1 to test:echo: 1 messages, 1 tools -> tool_use, 1 tool calls" in line
        for line in lines
    )
    assert any(
        "tooloop.models.test INFO request 2 to test:echo: 2 messages, 1 tools -> end_turn, 0 tool calls" in line
        for line in lines
    )
    assert any(line.startswith("tooloop.loop INFO tool lookup (call_0): ok in ") for line in lines)
    finished = [line for line in lines if " finished in " in line]
    assert len(finished) == 1 and "stop_reason=end_turn" in finished[0] and "2 requests" in finished[0]
    assert result.text.startswith("You said: secret prompt text")
    assert not any("secret prompt text" in line or "is sunny" in line for line in lines), lines


async def test_contents_are_logged_at_debug_only_when_asked(
    caplog: pytest.LogCaptureFixture, content_logging: Callable[[bool], None]
) -> None:
    content_logging(True)
    caplog.set_level(logging.INFO, logger="tooloop")
    await Agent("test:echo", tools=[lookup]).run("secret prompt text")
    assert not any("secret prompt text" in line for line in texts(caplog))

    caplog.clear()
    caplog.set_level(logging.DEBUG, logger="tooloop")
    await Agent("test:echo", tools=[lookup]).run("secret prompt text")
    lines = texts(caplog)
    assert any(
        line.startswith("tooloop.models.test DEBUG request 1 messages:") and "secret prompt text" in line
        for line in lines
    )
    assert any("DEBUG tool call_0 arguments={'city': 'text'} result='text is sunny'" in line for line in lines)


async def test_a_failed_request_is_logged_and_no_key_or_header_ever_is(
    wire: WireServer,
    openai_model: OpenAIChatModel,
    caplog: pytest.LogCaptureFixture,
    content_logging: Callable[[bool], None],
) -> None:
    content_logging(True)
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx's included
    caplog.set_level(logging.DEBUG, logger="tooloop")
    wire.queue(
        plain(
            completion(
                {"content": None, "tool_calls": [tool_call("c1", "lookup", '{"city": "Oslo"}')]},
                "tool_calls",
                usage(30, 5),
            )
        ),
        plain(completion({"content": "Sunny."}, "stop", usage(50, 3))),
    )
    assert (await Agent(openai_model, tools=[lookup]).run("weather?")).text == "Sunny."
    from tests.support.wire import json_reply

    wire.queue(json_reply({"error": {"message": "boom", "type": "server_error"}}, 400))
    with pytest.raises(Exception, match="boom"):
        await Agent(openai_model).run("again")
    await openai_model.aclose()
    everything = "\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records)
    assert "tooloop.models.openai WARNING" not in everything  # (levels are not in this text)
    assert any(r.name == "tooloop.models.openai" and r.levelno == logging.WARNING for r in caplog.records)
    assert "request 1 to gpt-4.1-mini failed" in everything
    assert SECRET not in everything
    assert "Bearer" not in everything and "authorization" not in everything.lower()


async def test_store_writes_are_logged_at_debug(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="tooloop.store")
    agent = Agent("test:echo", store=f"sqlite:///{tmp_path}/s.db")
    await agent.run("hello", session_id="s1")
    lines = texts(caplog)
    assert "tooloop.store DEBUG session s1: wrote 1 messages (v1)" in lines
    assert "tooloop.store DEBUG session s1: wrote 1 messages (v2)" in lines


def run_script(env: dict[str, str], script: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TOOLOOP_LOG")}
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env={**base, **env}, timeout=60
    )


SCRIPT = """
import tooloop
def lookup(city: str) -> str:
    '''Look a city up.'''
    return city + ' is sunny'
print(tooloop.Agent('test:echo', tools=[lookup]).run_sync('private words').text)
"""


@pytest.mark.parametrize("level", ["info", "debug"])
def test_tooloop_log_switches_on_a_readable_stderr_handler(level: str) -> None:
    done = run_script({"TOOLOOP_LOG": level}, SCRIPT)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert any(" INFO  tooloop.loop: run " in line and "stop_reason=end_turn" in line for line in lines), lines
    assert any(" INFO  tooloop.loop: tool lookup (call_0): ok in " in line for line in lines), lines
    sent = any(" DEBUG tooloop.models.test: request 1 to test:echo sent" in line for line in lines)
    assert sent is (level == "debug")
    assert "private words" not in done.stderr


def test_tooloop_log_content_adds_contents_at_debug() -> None:
    done = run_script({"TOOLOOP_LOG": "debug", "TOOLOOP_LOG_CONTENT": "1"}, SCRIPT)
    assert done.returncode == 0, done.stderr
    assert "private words" in done.stderr


def test_a_bad_tooloop_log_value_says_so_and_logs_nothing() -> None:
    done = run_script({"TOOLOOP_LOG": "loud"}, SCRIPT)
    assert done.returncode == 0
    assert (
        done.stderr.strip()
        == "tooloop: TOOLOOP_LOG='loud' is not one of debug, info, warning, error; logging stays off"
    )


def test_configure_logging_installs_and_removes_its_handler(content_logging: Callable[[bool], None]) -> None:
    import io

    from tooloop.telemetry import configure_logging

    root = logging.getLogger("tooloop")
    out = io.StringIO()
    handler = configure_logging("info", stream=out)
    try:
        assert handler in root.handlers and root.level == logging.INFO
        Agent("test:echo").run_sync("hi")
        assert " INFO  tooloop.loop: run " in out.getvalue()
    finally:
        assert configure_logging(None) is None
    assert handler not in root.handlers and root.level == logging.NOTSET
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        configure_logging("loud")
