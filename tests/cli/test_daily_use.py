"""What a daily user of ``tooloop`` runs into: each test runs the real command as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.cli.conftest import MODEL, TOOLS, Cli, SlowChunks, call_reply, sent_messages, text_reply
from tests.support.wire import Reply, WireServer, json_reply

# ---------------------------------------------------------------------- a session remembers its setup


def test_the_printed_approval_hint_runs_the_approved_call(cli: Cli, wire: WireServer, tmp_path: Path) -> None:
    doomed = tmp_path / "doomed.txt"
    doomed.write_text("x")
    wire.queue(call_reply("remove_file", {"path": str(doomed)}), text_reply("Removed."))
    first = cli("run", "Clean up", "--model", MODEL, "--tool", TOOLS)
    assert first.returncode == 4, first.stderr
    hint = next(line for line in first.stderr.splitlines() if "decide with" in line)
    command = hint.split("'")[1]
    assert command.startswith("tooloop run --session ") and command.endswith("--approve all")

    second = cli(*command.split()[1:])
    assert second.returncode == 0, second.stderr
    assert "restored from the session" in second.stderr and "cli_tools.py:TOOLS" in second.stderr
    assert not doomed.exists()
    assert sent_messages(wire, 1)[-1]["content"] == f"deleted {doomed}"


def test_continue_keeps_the_system_prompt_tools_and_options(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply("One."), text_reply("Two."), text_reply("Three."))
    first = cli("run", "Hi", "--model", MODEL, "--system", "Be brief.", "--tool", TOOLS, "-o", "temperature", "0.2")
    assert first.returncode == 0, first.stderr
    second = cli("run", "-c", "Again")
    assert second.returncode == 0, second.stderr
    body = wire.requests[1].json
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert [t["function"]["name"] for t in body["tools"]] == ["add", "explode", "remove_file", "long_text"]
    assert body["temperature"] == 0.2
    assert "restored from the session: system prompt; tools " in second.stderr
    assert "options temperature=0.2" in second.stderr

    # An option given again wins for this turn and is remembered.
    third = cli("run", "-c", "Once more", "--system", "Be long.", "-o", "temperature", "0.9")
    assert third.returncode == 0, third.stderr
    body = wire.requests[2].json
    assert body["messages"][0] == {"role": "system", "content": "Be long."}
    assert body["temperature"] == 0.9
    shown = cli("sessions", "show", "last")
    assert "system: Be long." in shown.stdout and "options: temperature=0.9" in shown.stdout


def test_model_options_reach_the_request_and_bad_ones_are_one_line(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply("Ok."))
    done = cli(
        "run", "Hi", "--model", MODEL, "-o", "max_tokens", "50", "-o", "seed", "7", "-o", "reasoning_effort", "low"
    )
    assert done.returncode == 0, done.stderr
    body = wire.requests[0].json
    assert body["max_completion_tokens"] == 50 and body["seed"] == 7 and body["reasoning_effort"] == "low"

    bad = cli("run", "Hi", "--model", MODEL, "-o", "temperature", "hot")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1] == 'error: -o temperature: expected a number, not "hot"'


def test_base_url_and_api_key_env_choose_the_server_and_the_key(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply("Hello."))
    env = {k: v for k, v in cli.env.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    env["MY_KEY"] = "sk-from-my-key"
    done = Cli(env, cli.cwd)(
        "run", "Hi", "--model", "openai-compatible:local", "--base-url", wire.url + "/v1", "--api-key-env", "MY_KEY"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello.\n"
    assert wire.requests[0].headers["authorization"] == "Bearer sk-from-my-key"

    missing = Cli(env, cli.cwd)("run", "Hi", "--model", "openai-compatible:local")
    assert missing.returncode == 2
    assert "--base-url URL" in missing.stderr and "base_url" not in missing.stderr.replace("--base-url", "")


# ---------------------------------------------------------------------- agents and tool files


def test_agent_tools_beside_the_config_file_import_from_another_folder(bare_cli: Cli, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "mytools.py").write_text(
        "from tooloop import tool\n\n@tool\ndef shout(text: str) -> str:\n    '''Shout.'''\n    return text.upper()\n"
    )
    (project / "tooloop.toml").write_text('[agents.helper]\nmodel = "test:echo"\ntools = ["mytools:shout"]\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(bare_cli.env, TOOLOOP_CONFIG=str(project / "tooloop.toml"))
    listed = Cli(env, elsewhere)("tools", "--agent", "helper")
    assert listed.returncode == 0, listed.stderr
    assert "shout" in listed.stdout
    ran = Cli(env, elsewhere)("run", "hi", "--agent", "helper")
    assert ran.returncode == 0, ran.stderr
    assert "shout" in ran.stderr


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import not_a_real_module_xyz\n", "needs the module 'not_a_real_module_xyz', which is not installed"),
        ("def broken(:\n    pass\n", "syntax error at "),
        ("x = 1\nraise RuntimeError('no config here')\n", "importing it raised RuntimeError: no config here (at "),
    ],
)
def test_tool_file_mistakes_are_usage_errors_naming_the_file(
    bare_cli: Cli, tmp_path: Path, source: str, expected: str
) -> None:
    (tmp_path / "badtools.py").write_text(source)
    done = bare_cli("run", "hi", "--model", "test:echo", "--tool", "badtools.py:anything")
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr
    assert "run from the folder" not in done.stderr and "internal error" not in done.stderr
    if "raise" in source or "def broken" in source:
        assert "badtools.py:" in done.stderr.split("--tool")[-1]


# ---------------------------------------------------------------------- input and output


def test_piped_input_that_is_not_utf8_is_refused_with_its_offset(cli: Cli, wire: WireServer) -> None:
    command = [sys.executable, "-m", "tooloop", "run", "Say", "--model", MODEL]
    latin = subprocess.run(command, input=b"caf\xe9", capture_output=True, env=cli.env, cwd=cli.cwd, timeout=60)
    assert latin.returncode == 2
    assert b"standard input is not utf-8: byte 0xe9 at offset 3" in latin.stderr
    assert len(latin.stderr) < 300

    binary = subprocess.run(command, input=b"\x7fELF\x00\x01", capture_output=True, env=cli.env, timeout=60)
    assert binary.returncode == 2
    assert binary.stderr.decode().strip().splitlines()[-1].startswith("error: standard input looks binary")

    wire.queue(text_reply("Ok."))
    decoded = subprocess.run(
        [*command, "--encoding", "latin-1"], input=b"caf\xe9", capture_output=True, env=cli.env, timeout=60
    )
    assert decoded.returncode == 0, decoded.stderr
    assert wire.requests[0].json["messages"][0]["content"] == "Say\n\ncafé"


def test_a_prompt_argument_that_is_not_utf8_is_read_or_refused(cli: Cli, wire: WireServer) -> None:
    argument = b"SAY caf\xe9"
    refused = subprocess.run(
        [sys.executable.encode(), b"-m", b"tooloop", b"run", argument, b"--model", MODEL.encode(), b"--json"],
        capture_output=True,
        env=cli.env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert refused.returncode == 2
    assert b"the prompt argument is not utf-8: byte 0xe9 at offset 7" in refused.stderr
    refused.stdout.decode("utf-8")  # nothing that is not UTF-8

    wire.queue(text_reply("Bien."))
    command = [sys.executable.encode(), b"-m", b"tooloop", b"run", argument, b"--model", MODEL.encode(), b"--json"]
    read = subprocess.run(
        [*command, b"--encoding", b"latin-1"],
        capture_output=True,
        env=cli.env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout.decode("utf-8"))["messages"][0]["text"] == "SAY café"


def test_piped_output_streams_as_it_comes(cli: Cli, wire: WireServer) -> None:
    release, started = threading.Event(), threading.Event()
    reply = text_reply("FIRSTHALF-secondhalf")
    assert reply.chunks is not None
    chunks = reply.chunks

    def handler(_: object) -> Reply:
        started.set()
        return Reply(reply.status, reply.headers, chunks=SlowChunks(chunks[:2], chunks[2:], release))  # type: ignore[arg-type]

    wire.queue(handler)
    process = cli.popen("run", "Go", "--model", MODEL)
    try:
        assert started.wait(60)
        assert process.stdout is not None
        first = process.stdout.read(len("FIRSTHALF-"))  # arrives before the rest is even sent
        assert first == "FIRSTHALF-"
        release.set()
        rest, _ = process.communicate(timeout=60)
    finally:
        release.set()
        if process.poll() is None:
            process.kill()
    assert first + rest == "FIRSTHALF-secondhalf\n"
    assert process.returncode == 0


def test_a_cancelled_piped_answer_stays_on_stdout(cli: Cli, wire: WireServer) -> None:
    release, started = threading.Event(), threading.Event()
    reply = text_reply("PARTIAL+never+")
    assert reply.chunks is not None
    chunks = reply.chunks

    def handler(_: object) -> Reply:
        started.set()
        return Reply(reply.status, reply.headers, chunks=SlowChunks(chunks[:2], chunks[2:], release))  # type: ignore[arg-type]

    wire.queue(handler)
    process = cli.popen("run", "Go", "--model", MODEL)
    try:
        assert started.wait(60)
        assert process.stdout is not None
        first = process.stdout.read(len("PARTIAL"))  # the first text is out before the Ctrl-C
        process.send_signal(2)
        rest, err = process.communicate(timeout=60)
    finally:
        release.set()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert first + rest == "PARTIAL\n"
    assert "PARTIAL" not in err


def test_output_closed_early_by_the_reader_is_not_an_error(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply("x" * 200_000))
    assert cli("run", "Long", "--model", MODEL).returncode == 0
    shown = subprocess.run(
        f"{sys.executable} -m tooloop sessions show last --full | head -c1",
        shell=True,
        capture_output=True,
        text=True,
        env=cli.env,
        cwd=cli.cwd,
        timeout=60,
    )
    assert shown.stdout == "s"
    assert shown.stderr == ""


# ---------------------------------------------------------------------- stores and sessions


def test_an_unreachable_postgres_store_is_one_line_within_seconds(bare_cli: Cli) -> None:
    started = time.monotonic()
    done = bare_cli("sessions", "list", "--store", "postgresql://me:s3cret@127.0.0.1:1/db")
    elapsed = time.monotonic() - started
    assert done.returncode == 1
    assert elapsed < 20
    first = done.stderr.splitlines()[0]
    assert first.startswith("error: PostgreSQL at postgresql://me:***@127.0.0.1:1/db stayed unreachable for 5 s")
    assert "s3cret" not in done.stderr and "Error connecting" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 2  # the error and its hint


def test_sessions_list_checks_its_limit_and_aligns_a_header(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply("A."), json_reply({"error": {"message": "boom", "type": "server_error"}}, status=400))
    assert cli("run", "The first question", "--model", MODEL).returncode == 0
    failed = cli("run", "A question that fails", "--model", MODEL, "--no-stream")
    assert failed.returncode == 1

    for limit in ("0", "-3"):
        bad = cli("sessions", "list", "--limit", limit)
        assert bad.returncode == 2
        assert f"--limit must be at least 1, not {limit}" in bad.stderr
    listed = cli("sessions", "list", "-n", "5")
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["ID", "UPDATED", "MSGS", "MODEL", "TITLE"]
    title_at = lines[0].index("TITLE")
    # a failed first turn is titled by its prompt; every title starts under its header
    assert [line[title_at:] for line in lines[1:]] == ["A question that fails", "The first question"]

    shown = cli("sessions", "show", "last")
    assert "last run: error: " in shown.stdout and "boom" in shown.stdout


def test_sessions_take_a_unique_prefix_or_last(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply("A."), text_reply("B."))
    assert cli("run", "one", "--model", MODEL, "--session", "alpha-1").returncode == 0
    assert cli("run", "two", "--model", MODEL, "--session", "alpha-2").returncode == 0
    assert "two" in cli("sessions", "show", "last").stdout
    assert "one" in cli("sessions", "show", "alpha-1").stdout
    assert cli("sessions", "export", "alpha-2").returncode == 0
    ambiguous = cli("sessions", "show", "alpha")
    assert ambiguous.returncode == 2
    assert "alpha-1" in ambiguous.stderr and "alpha-2" in ambiguous.stderr
    data = json.loads(cli("sessions", "show", "last", "--json").stdout)
    assert data["id"] == "alpha-2" and data["setup"]["model"] == MODEL
    assert cli("sessions", "path").stdout.strip().endswith("sessions.db")


def test_sessions_import_says_how_to_import_again_and_refuses_latin1(
    cli: Cli, wire: WireServer, tmp_path: Path
) -> None:
    wire.queue(text_reply("A."))
    assert cli("run", "one", "--model", MODEL, "--session", "s-1").returncode == 0
    export = tmp_path / "s.json"
    assert cli("sessions", "export", "s-1", "-o", str(export)).returncode == 0
    again = cli("sessions", "import", str(export))
    assert again.returncode == 2
    assert "--id NEW_ID" in again.stderr and "--store" not in again.stderr
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"title": "caf\xe9"}')
    refused = cli("sessions", "import", str(latin))
    assert refused.returncode == 2
    assert "is not UTF-8 (byte 0xe9 at offset 14)" in refused.stderr and "internal error" not in refused.stderr


def test_an_unknown_session_id_is_said_before_starting_one(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply("A."))
    done = cli("run", "hi", "--model", MODEL, "--session", "typo-id")
    assert done.returncode == 0
    assert "no stored session 'typo-id': starting a new session under this id" in done.stderr
    chat = cli("chat", "--model", MODEL, "--session", "other-typo", input="/exit\n")
    assert "no stored session 'other-typo'" in chat.stderr


# ---------------------------------------------------------------------- words of the command line


def test_help_shows_table_names_and_no_bool_placeholders(bare_cli: Cli) -> None:
    shown = bare_cli("run", "--help").stdout
    assert "[agents.NAME]" in shown and "[mcp_servers]" in shown
    assert "<bool>" not in shown
    version = bare_cli("--version")
    assert version.returncode == 0
    assert version.stdout.startswith("tooloop ")


def test_messages_speak_of_options_not_keyword_arguments(bare_cli: Cli) -> None:
    empty = bare_cli("run", "", "--model", "test:echo")
    assert empty.returncode == 2
    assert "the prompt is empty" in empty.stderr
    assert "session" not in empty.stderr.split("the prompt is empty")[0]
    assert "None" not in empty.stderr
    assert bare_cli("sessions", "list").stderr.strip() == "no sessions yet"

    no_key = bare_cli("run", "hi", "--model", "openai:gpt-4.1-mini")
    assert no_key.returncode == 2
    assert "--api-key-env NAME" in no_key.stderr and "api_key=" not in no_key.stderr


def test_agent_repr_names_its_parts() -> None:
    from tooloop import Agent

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert repr(Agent("openai:gpt-4.1", system="Be brief.", tools=[add])) == (
        "Agent(model='openai:gpt-4.1', system='Be brief.', tools=['add'])"
    )


def test_agent_from_python_and_the_agents_of_the_config_file(bare_cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "myagents.py").write_text(
        "from tooloop import Agent\n\nhelper = Agent('test:echo', system='Python agent.')\nnot_agent = 3\n"
    )
    ran = bare_cli("run", "hello", "--agent", "myagents.py:helper")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("You said: hello")
    assert "model test:echo (agent myagents.py:helper)" in ran.stderr
    wrong = bare_cli("run", "hello", "--agent", "myagents.py:not_agent")
    assert wrong.returncode == 2
    assert "has a int named 'not_agent', not an Agent" in wrong.stderr

    (tmp_path / "tooloop.toml").write_text(
        '[agents.reviewer]\nmodel = "test:echo"\nsystem = "You review code."\n\n'
        '[agents.writer]\nmodel = "openai:gpt-4.1"\n'
    )
    listed = bare_cli("agents")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == ["reviewer  test:echo", "  system: You review code.", "writer  openai:gpt-4.1"]
    data = json.loads(bare_cli("agents", "--json").stdout)
    assert [a["name"] for a in data["agents"]] == ["reviewer", "writer"]


def test_models_options_lists_what_a_model_accepts(bare_cli: Cli) -> None:
    shown = bare_cli("models", "--options", "openai:gpt-4.1")
    assert shown.returncode == 0, shown.stderr
    keys = [line.split()[0] for line in shown.stdout.splitlines() if line.strip()]
    assert keys[:7] == ["option", "temperature", "max_tokens", "top_p", "seed", "stop", "parallel_tool_calls"]
    assert "reasoning_effort" in shown.stdout
    unknown = bare_cli("models", "--options", "nope:model")
    assert unknown.returncode == 2
    assert "unknown provider 'nope'" in unknown.stderr
