"""A request whose run was killed (kill -9) before it closed still counts in the session's
totals once the session is resumed: its usage is stored with its answer."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from tests.cli.conftest import MODEL, Cli, call_reply, text_reply
from tests.support.wire import WireServer

_TOOLS = '''
import pathlib, time

MARK = pathlib.Path(__file__).with_name("started")


def wait_here() -> str:
    """Wait the first time (the run is killed meanwhile); answer at once after that."""
    if not MARK.exists():
        MARK.write_text("yes")
        time.sleep(60)
    return "done"
'''


def test_a_killed_request_s_usage_is_in_the_session_total_after_resume(
    cli: Cli, wire: WireServer, tmp_path: Path
) -> None:
    (tmp_path / "slow_tools.py").write_text(_TOOLS)
    tool = f"{tmp_path / 'slow_tools.py'}:wait_here"
    wire.queue(call_reply("wait_here", {}))  # 30 tokens in, 10 out
    process = cli.popen("run", "Wait for it", "--model", MODEL, "--tool", tool, "--session", "s-kill")
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started").exists():
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL

    wire.queue(call_reply("wait_here", {}, call_id="call_2"), text_reply("Done now.", prompt_tokens=40))
    again = cli("run", "Go on", "--session", "s-kill", "--json", "--approve", "all")
    assert again.returncode == 0, again.stderr
    run_usage = json.loads(again.stdout)["usage"]
    total = json.loads(cli("sessions", "show", "s-kill", "--json").stdout)["usage"]
    assert total["requests"] == 1 + run_usage["requests"]
    assert total["input_tokens"] == 30 + run_usage["input_tokens"]
    assert total["output_tokens"] == 10 + run_usage["output_tokens"]

    # counted once: a further run adds only its own
    wire.queue(text_reply("Bye.", prompt_tokens=7))
    assert cli("run", "Thanks", "--session", "s-kill").returncode == 0
    later = json.loads(cli("sessions", "show", "s-kill", "--json").stdout)["usage"]
    assert later["input_tokens"] == total["input_tokens"] + 7
    assert later["requests"] == total["requests"] + 1
