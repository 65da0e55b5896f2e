"""``tooloop run`` as a subprocess against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import pytest

from tests.cli.conftest import MODEL, TOOLS, Cli, SlowChunks, call_reply, sent_messages, text_reply
from tests.models.openai_wire import chunk
from tests.support.wire import Reply, WireServer

MODES = ["stream", "plain"]


def _mode_args(mode: str) -> list[str]:
    return ["--no-stream"] if mode == "plain" else []


@pytest.mark.parametrize("mode", MODES)
def test_answer_alone_on_stdout(cli: Cli, wire: WireServer, mode: str) -> None:
    wire.queue(text_reply("It is sunny.", mode))
    done = cli("run", "Weather in Paris?", "--model", MODEL, *_mode_args(mode))

    assert done.returncode == 0, done.stderr
    assert done.stdout == "It is sunny.\n"
    assert "model openai:gpt-4.1-mini · session " in done.stderr
    assert "end_turn · 20 tokens in, 5 out · 1 request · 0 tool calls" in done.stderr
    body = wire.requests[0].json
    assert body["messages"] == [{"role": "user", "content": "Weather in Paris?"}]
    assert body.get("stream", False) is (mode == "stream")


@pytest.mark.parametrize("mode", MODES)
def test_tool_call_shown_on_stderr_and_result_sent_back(cli: Cli, wire: WireServer, mode: str) -> None:
    wire.queue(call_reply("add", {"a": 2, "b": 40}, mode), text_reply("The sum is 42.", mode))
    done = cli("run", "What is 2 + 40?", "--model", MODEL, "--tool", TOOLS, *_mode_args(mode))

    assert done.returncode == 0, done.stderr
    assert done.stdout == "The sum is 42.\n"
    assert 'tool add({"a": 2, "b": 40}) -> ok: 42' in done.stderr
    assert "2 requests · 1 tool call" in done.stderr
    assert [t["function"]["name"] for t in wire.requests[0].json["tools"]] == [
        "add",
        "explode",
        "remove_file",
        "long_text",
    ]
    assert sent_messages(wire, 1)[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}


def test_tool_error_and_long_result_are_shown_collapsed(cli: Cli, wire: WireServer) -> None:
    wire.queue(
        call_reply("explode", {"reason": "boom"}),
        call_reply("long_text", {"size": 5000}, call_id="call_2"),
        text_reply("Done."),
    )
    done = cli("run", "Try things", "--model", MODEL, "--tool", TOOLS)

    assert done.returncode == 0, done.stderr
    assert 'tool explode({"reason": "boom"}) -> error: ValueError: exploded: boom' in done.stderr
    long_line = next(line for line in done.stderr.splitlines() if line.startswith("tool long_text"))
    assert long_line.endswith("… [4,700 more characters]")
    assert len(long_line) < 400
    assert "exploded: boom" in sent_messages(wire, 1)[-1]["content"]


def test_text_that_comes_with_tool_calls_is_not_the_answer(cli: Cli, wire: WireServer) -> None:
    first = call_reply("add", {"a": 1, "b": 1})
    assert first.chunks is not None
    first.chunks.insert(1, f"data: {json.dumps(chunk({'content': 'Let me add.'}))}\n\n".encode())
    wire.queue(first, text_reply("2"))
    done = cli("run", "1+1", "--model", MODEL, "--tool", TOOLS)

    assert done.returncode == 0, done.stderr
    assert done.stdout == "2\n"
    assert "Let me add." in done.stderr


def test_json_shape(cli: Cli, wire: WireServer) -> None:
    wire.queue(call_reply("add", {"a": 2, "b": 40}), text_reply("42"))
    done = cli("run", "2+40?", "--model", MODEL, "--tool", TOOLS, "--json")

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert sorted(result) == [
        "error",
        "messages",
        "model",
        "output",
        "pending_approvals",
        "session_id",
        "stop_reason",
        "text",
        "tool_calls",
        "usage",
    ]
    assert result["text"] == "42"
    assert result["stop_reason"] == "end_turn"
    assert result["model"] == MODEL
    assert result["error"] is None
    assert result["tool_calls"] == [
        {
            "id": "call_1",
            "name": "add",
            "arguments": {"a": 2, "b": 40},
            "status": "ok",
            "content": "42",
            "error_type": None,
        }
    ]
    assert isinstance(result["usage"].pop("cost"), str)  # an exact decimal, in US dollars
    assert result["usage"] == {
        "input_tokens": 50,
        "output_tokens": 15,
        "requests": 2,
        "tool_calls": 1,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "cache_write_1h_tokens": 0,
        "reasoning_tokens": 0,
        "total_tokens": 65,
    }
    assert [m["kind"] for m in result["messages"]] == ["user", "tool_call", "assistant"]
    assert done.stdout.count("\n") == 1


def test_piped_input_is_appended_to_the_prompt_or_is_the_prompt(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply("A summary."), text_reply("Another."))
    appended = cli("run", "Summarise", "--model", MODEL, input="line one\nline two\n")
    alone = cli("run", "--model", MODEL, input="just this")

    assert appended.returncode == 0 and alone.returncode == 0, appended.stderr + alone.stderr
    assert appended.stdout == "A summary.\n"
    assert sent_messages(wire, 0) == [{"role": "user", "content": "Summarise\n\nline one\nline two\n"}]
    assert sent_messages(wire, 1) == [{"role": "user", "content": "just this"}]


def test_sessions_continue_with_session_and_with_c(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply("Hello Ada."), text_reply("Your name is Ada."), text_reply("Still Ada."))
    first = cli("run", "My name is Ada.", "--model", "openai:gpt-custom-1", "--session", "s-ada")
    second = cli("run", "What is my name?", "--session", "s-ada")
    third = cli("run", "-c", "And now?", "--json")

    assert [first.returncode, second.returncode, third.returncode] == [0, 0, 0], third.stderr
    assert second.stdout == "Your name is Ada.\n"
    assert sent_messages(wire, 1) == [
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Hello Ada."},
        {"role": "user", "content": "What is my name?"},
    ]
    assert len(sent_messages(wire, 2)) == 5
    # the session's model is remembered: the continued runs used it without --model
    assert [r.json["model"] for r in wire.requests] == ["gpt-custom-1"] * 3
    assert json.loads(third.stdout)["session_id"] == "s-ada"
    assert "the session's model" in second.stderr


def test_continue_without_any_session_is_a_usage_error(cli: Cli) -> None:
    done = cli("run", "-c", "hello")
    assert done.returncode == 2
    assert "no session to continue" in done.stderr


def test_limit_stop_exit_code(cli: Cli, wire: WireServer) -> None:
    wire.queue(call_reply("add", {"a": 1, "b": 2}))
    done = cli("run", "Add forever", "--model", MODEL, "--tool", TOOLS, "--max-turns", "1")

    assert done.returncode == 3, done.stderr
    assert done.stdout == ""
    assert "max_turn_requests" in done.stderr


def test_approval_needed_without_a_terminal_then_decided_with_approve_all(
    cli: Cli, wire: WireServer, tmp_path: Path
) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("bye")
    wire.queue(call_reply("remove_file", {"path": str(target)}))
    waiting = cli("run", "Delete it", "--model", MODEL, "--tool", TOOLS, "--session", "s-appr", "--json")

    assert waiting.returncode == 4, waiting.stderr
    result = json.loads(waiting.stdout)
    assert result["stop_reason"] == "approval_required"
    assert [p["tool_name"] for p in result["pending_approvals"]] == ["remove_file"]
    assert "wait for approval (remove_file)" in waiting.stderr
    assert "--approve all" in waiting.stderr
    assert target.exists()

    wire.queue(text_reply("Deleted."))
    approved = cli("run", "--session", "s-appr", "--tool", TOOLS, "--approve", "all")
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout == "Deleted.\n"
    assert not target.exists()
    assert "tool remove_file" in approved.stderr and "-> ok: deleted" in approved.stderr


def test_approve_none_denies_and_the_model_is_told(cli: Cli, wire: WireServer, tmp_path: Path) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("stay")
    wire.queue(call_reply("remove_file", {"path": str(target)}), text_reply("I was not allowed."))
    done = cli("run", "Delete it", "--model", MODEL, "--tool", TOOLS, "--approve", "none")

    assert done.returncode == 0, done.stderr
    assert target.exists()
    assert "-> denied:" in done.stderr
    assert "--approve none" in sent_messages(wire, 1)[-1]["content"]


def test_bad_model_string_is_a_usage_error(cli: Cli, wire: WireServer) -> None:
    done = cli("run", "hi", "--model", "gpt-4.1")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "must look like 'provider:model'" in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 3
    assert wire.requests == []


def test_missing_key_names_the_variable(bare_cli: Cli) -> None:
    done = bare_cli("run", "hi", "--model", "openai:gpt-4.1-mini")
    assert done.returncode == 2
    assert "OPENAI_API_KEY" in done.stderr
    assert "Traceback" not in done.stderr


def test_no_model_at_all_says_how_to_choose_one(bare_cli: Cli) -> None:
    done = bare_cli("run", "hi")
    assert done.returncode == 2
    assert "no model: pass --model" in done.stderr


def test_server_down_is_an_error_with_a_hint_and_debug_shows_the_traceback(bare_cli: Cli) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    bare_cli.env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1")
    done = bare_cli("run", "hi", "--model", MODEL)

    assert done.returncode == 1
    assert "error:" in done.stderr and "hint: is the server running?" in done.stderr
    assert "Traceback" not in done.stderr

    debug = bare_cli("run", "hi", "--model", MODEL, "--debug")
    assert debug.returncode == 1
    assert "Traceback" in debug.stderr


def test_provider_error_with_json_still_prints_the_result(cli: Cli, wire: WireServer) -> None:
    wire.queue(Reply(401, {"content-type": "application/json"}, b'{"error": {"message": "bad key"}}'))
    done = cli("run", "hi", "--model", MODEL, "--json")

    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["stop_reason"] == "error"
    assert result["error"]["type"] == "AuthenticationError"
    assert "hint: the provider refused the key" in done.stderr


def test_timeout_is_a_limit(cli: Cli, wire: WireServer) -> None:
    release = threading.Event()

    def slow(_: object) -> Reply:
        release.wait(30)
        return text_reply("late")

    wire.queue(slow)
    try:
        done = cli("run", "hi", "--model", MODEL, "--timeout", "1")
    finally:
        release.set()
    assert done.returncode == 3, done.stderr
    assert "--timeout" in done.stderr


def test_ctrl_c_cancels_the_run_and_keeps_the_session(cli: Cli, wire: WireServer) -> None:
    release = threading.Event()
    started = threading.Event()
    slow = text_reply("Once upon a time, there was a very long story.")
    assert slow.chunks is not None

    def handler(_: object) -> Reply:
        started.set()
        return Reply(slow.status, slow.headers, chunks=SlowChunks(slow.chunks[:2], slow.chunks[2:], release))  # type: ignore[arg-type]

    wire.queue(handler)
    process = cli.popen("run", "Tell a story", "--model", MODEL, "--session", "s-story")
    try:
        assert started.wait(60)
        assert process.stdout is not None
        assert process.stdout.read(len("Once upon a time, there")) == "Once upon a time, there"  # the first text is out
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        release.set()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "cancelled; the session is kept" in stderr

    wire.queue(text_reply("The end."))
    again = cli("run", "Finish it", "--session", "s-story")
    assert again.returncode == 0, again.stderr
    assert sent_messages(wire, 1)[0] == {"role": "user", "content": "Tell a story"}
    assert sent_messages(wire, 1)[-1] == {"role": "user", "content": "Finish it"}
