"""``tooloop sessions``, ``models``, ``tools``, help, and the package's import hygiene."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import MODEL, TOOLS, Cli, call_reply, text_reply
from tests.support.wire import WireServer

SRC = Path(__file__).resolve().parents[2] / "src" / "tooloop"


@pytest.fixture
def two_sessions(cli: Cli, wire: WireServer) -> Cli:
    wire.queue(call_reply("add", {"a": 2, "b": 40}), text_reply("The answer is 42."), text_reply("Bonjour."))
    first = cli("run", "Add 2 and 40", "--model", MODEL, "--tool", TOOLS, "--session", "s-math")
    second = cli("run", "Say hello in French", "--model", MODEL, "--session", "s-hello")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    return cli


def test_sessions_list_and_json(two_sessions: Cli) -> None:
    listed = two_sessions("sessions", "list")
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["ID", "s-hello", "s-math"]
    assert "Say hello in French" in lines[1]

    data = json.loads(two_sessions("sessions", "list", "--json").stdout)
    assert [s["id"] for s in data] == ["s-hello", "s-math"]
    assert data[1]["message_count"] == 3
    assert data[1]["usage"] == {"input_tokens": 50, "output_tokens": 15, "requests": 2, "tool_calls": 1}


def test_sessions_show_renders_the_conversation(two_sessions: Cli) -> None:
    shown = two_sessions("sessions", "show", "s-math")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[1] == "  model: openai:gpt-4.1-mini"  # the setup the session remembers
    assert lines[2].startswith("  tools: ") and lines[2].endswith("tests/cli/cli_tools.py:TOOLS")
    assert lines[3:-1] == [
        "user: Add 2 and 40",
        '  tool add({"a": 2, "b": 40})',
        "    -> 42",
        "assistant: The answer is 42.",
        "stop: end_turn",
    ]
    assert lines[-1].startswith("usage: 50 tokens in, 15 out · 2 requests · 1 tool call")
    data = json.loads(two_sessions("sessions", "show", "s-math", "--json").stdout)
    assert [m["kind"] for m in data["messages"]] == ["user", "tool_call", "assistant"]


def test_sessions_search(two_sessions: Cli) -> None:
    found = two_sessions("sessions", "search", "FRENCH")
    assert found.returncode == 0
    assert found.stdout.startswith("s-hello  #0 user: ")
    hits = json.loads(two_sessions("sessions", "search", "42", "--json").stdout)
    assert {(h["session_id"], h["kind"]) for h in hits} == {("s-math", "tool_call"), ("s-math", "assistant")}
    missing = two_sessions("sessions", "search", "zebra")
    assert missing.returncode == 1 and missing.stdout == ""


def test_sessions_export_import_fork_delete(two_sessions: Cli, tmp_path: Path) -> None:
    exported = two_sessions("sessions", "export", "s-math")
    assert json.loads(exported.stdout)["format"] == "tooloop.session"
    imported = two_sessions("sessions", "import", "-", "--id", "s-copy", input=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout == "s-copy\n"
    file = tmp_path / "math.json"
    assert two_sessions("sessions", "export", "s-math", "-o", str(file)).returncode == 0
    assert two_sessions("sessions", "import", str(file), "--id", "s-file").stdout == "s-file\n"

    forked = two_sessions("sessions", "fork", "s-copy", "--at", "1", "--id", "s-fork")
    assert forked.stdout == "s-fork\n"
    assert "user: Add 2 and 40" in two_sessions("sessions", "show", "s-fork").stdout.splitlines()
    assert two_sessions("sessions", "fork", "s-copy", "--at", "9").returncode == 2

    assert two_sessions("sessions", "delete", "s-copy").returncode == 0
    gone = two_sessions("sessions", "show", "s-copy")
    assert gone.returncode == 1
    assert "s-copy" in gone.stderr and "Traceback" not in gone.stderr
    broken = two_sessions("sessions", "import", "-", input='{"format": "nope"}')
    assert broken.returncode == 1 and "not a tooloop session export" in broken.stderr


def test_models_lists_providers_and_whether_keys_are_set(cli: Cli) -> None:
    data = json.loads(cli("models", "--json").stdout)
    providers = {p["provider"]: p for p in data["providers"]}
    assert providers["openai"]["key_set"] is True
    assert providers["anthropic"]["key_set"] is False
    assert providers["ollama"]["key_set"] is None
    assert data["default"] == {"model": "openai:gpt-4.1-mini", "reason": "OPENAI_API_KEY is set"}
    text = cli("models").stdout
    assert "ANTHROPIC_API_KEY" in text and "NOT SET" in text


def test_tools_shows_what_the_model_sees(cli: Cli) -> None:
    data = json.loads(cli("tools", "--tool", TOOLS, "--json").stdout)
    add = next(t for t in data if t["name"] == "add")
    assert add["description"] == "Add two integers."
    assert add["parameters"]["required"] == ["a", "b"]
    assert next(t for t in data if t["name"] == "remove_file")["requires_approval"] is True
    bad = cli("tools", "--tool", "no_such_module:thing")
    assert bad.returncode == 2 and "cannot import 'no_such_module'" in bad.stderr


HELP_COMMANDS = [(), ("run",), ("chat",), ("models",), ("tools",), ("sessions",)] + [
    ("sessions", c) for c in ("list", "show", "search", "export", "import", "fork", "delete")
]


def test_help_everywhere_with_examples() -> None:
    # In-process (the same application object the console script runs): thirteen interpreters
    # would only measure start-up time.
    from typer.testing import CliRunner

    from tooloop.cli.app import _register_commands, app

    _register_commands()
    runner = CliRunner()
    for command in HELP_COMMANDS:
        done = runner.invoke(app, [*command, "--help"], prog_name="tooloop")
        assert done.exit_code == 0, (command, done.output)
        assert "Usage: tooloop" in done.output
        if command and command != ("sessions",):
            assert "Examples" in done.output, command


def test_help_of_the_installed_command(bare_cli: Cli) -> None:
    done = bare_cli("--help")
    assert done.returncode == 0
    assert "Exit codes: 0 answered" in done.stdout


def test_unknown_option_is_a_usage_error(bare_cli: Cli) -> None:
    assert bare_cli("run", "--no-such-option").returncode == 2


def test_import_tooloop_loads_no_cli_dependency() -> None:
    names = "('typer', 'rich', 'prompt_toolkit', 'tooloop.cli')"
    code = f"import sys, tooloop; print([m for m in {names} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_nothing_outside_the_cli_imports_it() -> None:
    offenders = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if "cli" not in path.relative_to(SRC).parts[:1]
        and path.name != "__main__.py"
        and ("from .cli" in (text := path.read_text()) or "tooloop.cli" in text or "from ..cli" in text)
    ]
    assert offenders == []
