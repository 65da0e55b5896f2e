"""The ``tooloop`` command run as a real subprocess against the scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.models.openai_wire import (
    call_args,
    call_start,
    chunk,
    completion,
    plain,
    stream,
    tool_call,
    usage,
    usage_chunk,
)
from tests.support.wire import Reply, WireServer

ROOT = Path(__file__).resolve().parents[2]
TOOLS = str(Path(__file__).with_name("cli_tools.py")) + ":TOOLS"
MODEL = "openai:gpt-4.1-mini"

# Variables a developer's shell may set that would change what the command does.
_CLEARED = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OLLAMA_HOST",
    "TOOLOOP_MODEL",
    "TOOLOOP_STORE",
    "TOOLOOP_DEBUG",
)


def text_reply(text: str, mode: str = "stream", prompt_tokens: int = 20) -> Reply:
    """The model answers ``text`` (streamed in two pieces, or as one plain completion)."""
    if mode == "plain":
        return plain(completion({"content": text, "refusal": None}, "stop", usage(prompt_tokens, 5)))
    half = len(text) // 2
    return stream(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": text[:half]}),
        chunk({"content": text[half:]}),
        chunk({}, "stop"),
        usage_chunk(usage(prompt_tokens, 5)),
    )


def call_reply(name: str, arguments: dict[str, Any], mode: str = "stream", call_id: str = "call_1") -> Reply:
    """The model asks for one tool call."""
    text = json.dumps(arguments)
    if mode == "plain":
        message = {"content": None, "refusal": None, "tool_calls": [tool_call(call_id, name, text)]}
        return plain(completion(message, "tool_calls", usage(30, 10)))
    return stream(
        chunk({"role": "assistant", "content": None, "tool_calls": [call_start(0, call_id, name)]}),
        chunk({"tool_calls": [call_args(0, text[:5])]}),
        chunk({"tool_calls": [call_args(0, text[5:])]}),
        chunk({}, "tool_calls"),
        usage_chunk(usage(30, 10)),
    )


@dataclass
class Cli:
    """Runs ``python -m tooloop`` with an environment pointing at the scripted server."""

    env: dict[str, str]
    cwd: Path

    def __call__(self, *args: str, input: str | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tooloop", *args],
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.cwd,
            timeout=timeout,
        )

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "tooloop", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.cwd,
        )


def base_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env["TOOLOOP_STORE"] = f"sqlite:///{tmp_path / 'sessions.db'}"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    env["NO_COLOR"] = "1"
    return env


@pytest.fixture
def cli(wire: WireServer, tmp_path: Path) -> Cli:
    """The command, with a key and base URL for the scripted server and a fresh session store."""
    env = base_env(tmp_path)
    env["OPENAI_API_KEY"] = "sk-test-key"
    env["OPENAI_BASE_URL"] = wire.url + "/v1"
    return Cli(env, tmp_path)


CHAT_PROMPT = "you>"
"""What ``tooloop chat`` shows when it waits for the next prompt."""
TERMINAL_SIZE = (50, 160)
"""Rows and columns of the pseudo-terminals the tests run the command under."""


def in_terminal(env: Mapping[str, str], cwd: Path, *arguments: str) -> pexpect.spawn:
    """``tooloop ARGUMENTS`` under a pseudo-terminal (an xterm of :data:`TERMINAL_SIZE`)."""
    return pexpect.spawn(
        sys.executable,
        ["-m", "tooloop", *arguments],
        env={**env, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"},
        cwd=str(cwd),
        encoding="utf-8",
        timeout=60,
        dimensions=TERMINAL_SIZE,
    )


def chat_in_terminal(cli: Cli, tools: str = TOOLS) -> Iterator[pexpect.spawn]:
    """``tooloop chat`` with ``tools`` under a pseudo-terminal, at its first prompt; killed
    afterwards if it is still running."""
    child = in_terminal(cli.env, cli.cwd, "chat", "--model", MODEL, "--tool", tools)
    try:
        child.expect(CHAT_PROMPT)
        yield child
    finally:
        if child.isalive():
            child.terminate(force=True)


@pytest.fixture
def spawn(cli: Cli) -> Iterator[pexpect.spawn]:
    """``tooloop chat`` with the test tools under a pseudo-terminal, at its first prompt."""
    yield from chat_in_terminal(cli)


@pytest.fixture
def bare_cli(tmp_path: Path) -> Cli:
    """The command with no provider configured."""
    return Cli(base_env(tmp_path), tmp_path)


def sent_messages(wire: WireServer, index: int) -> list[dict[str, Any]]:
    """The ``messages`` of the index-th request the server received."""
    body = wire.requests[index].json
    messages: list[dict[str, Any]] = body["messages"]
    return messages


Waiter = Callable[[], None]


class SlowChunks:
    """Chunks of a streamed reply that stop after the first ones until ``release`` is set."""

    def __init__(self, first: list[bytes], rest: list[bytes], release: Any):
        self.first, self.rest, self.release = first, rest, release

    def __iter__(self) -> Iterator[bytes]:
        yield from self.first
        self.release.wait(60)
        yield from self.rest
