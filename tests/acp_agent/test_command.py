"""``tooloop acp``: the CLI subcommand serves the same agent (driven by the Python SDK client)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import acp
import pytest

from tests.acp_agent.support import (
    ROOT,
    TIMEOUT,
    TOOLS,
    RecordingClient,
    agent_env,
    new_session,
    prompt,
    text_reply,
    tool_reply,
)
from tests.support.wire import WireServer


async def test_tooloop_acp_serves_a_tool_turn(wire: WireServer) -> None:
    wire.queue(tool_reply(("c1", "add", '{"a": 20, "b": 22}')), text_reply("42"))
    command = [sys.executable, "-m", "tooloop", "acp", "--model", "openai:gpt-4.1-mini"]
    for path in TOOLS:
        command += ["--tool", path]
    client = RecordingClient()
    async with acp.spawn_agent_process(client, *command, env=agent_env(wire), cwd=ROOT) as (conn, _):
        answer = await asyncio.wait_for(conn.initialize(protocol_version=1), TIMEOUT)
        assert answer.agent_info is not None and answer.agent_info.name == "tooloop"
        session = await new_session(conn)
        assert await prompt(conn, session, "20 + 22?") == "end_turn"
        assert client.tool_updates(session)[-1].status == "completed"
        assert client.text(session) == "42"


def test_tooloop_help_lists_acp_and_its_options() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}
    listing = subprocess.run(
        [sys.executable, "-m", "tooloop", "--help"], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert "acp" in listing.stdout
    helped = subprocess.run(
        [sys.executable, "-m", "tooloop", "acp", "--help"], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert helped.returncode == 0
    for option in ("--agent", "--model", "--tool", "--store", "--max-turns"):
        assert option in helped.stdout


def _command(args: list[str], cwd: os.PathLike[str] | str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200", "OPENAI_API_KEY": "sk-test-key"}
    env.pop("TOOLOOP_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "tooloop", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=TIMEOUT
    )


def test_a_tools_module_that_raises_on_import_is_a_usage_error_from_acp_and_run(tmp_path: Path) -> None:
    (tmp_path / "raising_tools.py").write_text('raise RuntimeError("no database at import time")\n')
    (tmp_path / "broken_tools.py").write_text("def f(:\n    pass\n")
    (tmp_path / "tooloop.toml").write_text('[agents.a]\nmodel = "openai:gpt-4.1-mini"\ntools = ["raising_tools:f"]\n')
    served = _command(["acp", "--model", "openai:gpt-4.1-mini", "--tool", "raising_tools:f"], tmp_path)
    assert served.returncode == 2
    assert served.stderr == (
        "tooloop acp: --tool 'raising_tools:f': importing 'raising_tools' failed: "
        "RuntimeError: no database at import time\n"
    )
    broken = _command(["acp", "--model", "openai:gpt-4.1-mini", "--tool", "broken_tools.py:f"], tmp_path)
    assert broken.returncode == 2
    assert broken.stderr.startswith("tooloop acp: --tool 'broken_tools.py:f': importing 'broken_tools.py' failed: ")
    assert "SyntaxError" in broken.stderr and "Traceback" not in broken.stderr
    run = _command(["run", "--agent", "a", "hello"], tmp_path)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert (
        f"{tmp_path / 'tooloop.toml'}: [agents.a] key 'tools': importing 'raising_tools' failed: "
        "RuntimeError: no database at import time"
    ) in run.stderr
    acp_agent = _command(["acp", "--agent", "a"], tmp_path)
    assert acp_agent.returncode == 2 and "Traceback" not in acp_agent.stderr
    assert "[agents.a] key 'tools': importing 'raising_tools' failed" in acp_agent.stderr


def test_a_malformed_store_url_is_a_usage_error_before_serving(tmp_path: Path) -> None:
    served = _command(["acp", "--model", "openai:gpt-4.1-mini", "--store", "sqlite:x.db"], tmp_path)
    assert served.returncode == 2
    assert served.stderr.startswith("tooloop acp: unknown store URL 'sqlite:x.db': use sqlite:///path.db")
    assert "Traceback" not in served.stderr and served.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_max_turns_with_an_agent_changes_only_that_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tooloop.acp.__main__ import _parser, build_agent

    (tmp_path / "tooloop.toml").write_text(
        '[agents.a]\nmodel = "test:echo"\nlimits = { max_turns = 9, max_total_tokens = 5000, tool_timeout = 7 }\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TOOLOOP_CONFIG", raising=False)
    limits = build_agent(_parser().parse_args(["--agent", "a", "--max-turns", "3"])).limits
    assert (limits.max_turns, limits.max_total_tokens, limits.tool_timeout) == (3, 5000, 7)
