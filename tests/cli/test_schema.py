"""``tooloop run --schema``: the answer as JSON matching a schema (concise form, inline JSON Schema
or a file), with the schema sent natively or in the instructions."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import MODEL, Cli, text_reply
from tests.models import anthropic_wire as aw
from tests.support.wire import WireServer

CONCISE = '{"name": "str", "age": "int", "tags": "list[str]", "email": "str?"}'


def test_schema_in_the_concise_form_prints_the_answer_as_json(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply('{"name": "Ada", "age": 36, "tags": ["maths"]}'))
    done = cli("run", "Who was Ada Lovelace?", "--model", MODEL, "--schema", CONCISE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36, "tags": ["maths"]}
    assert done.stdout.count('"name"') == 1  # the raw answer is not streamed before the JSON
    sent = wire.requests[0].json["response_format"]["json_schema"]["schema"]
    assert sent["properties"] == {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "email": {"type": "string"},
    }
    assert set(sent["required"]) == {"name", "age", "tags"}


def test_schema_from_a_file_and_an_invalid_answer_asked_again(cli: Cli, wire: WireServer, tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"year": {"type": "integer", "minimum": 1800}}, "required": ["year"]}
    (tmp_path / "year.json").write_text(json.dumps(schema))
    wire.queue(text_reply('{"year": 12}'), text_reply('{"year": 1965}'))
    done = cli("run", "When was Dune published?", "--model", MODEL, "--schema", "year.json", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["output"] == {"year": 1965}
    assert data["usage"]["requests"] == 2
    correction = wire.requests[1].json["messages"][-1]["content"]
    assert "year: 12 is less than the minimum of 1800" in correction


def test_schema_goes_in_the_instructions_for_anthropic(cli: Cli, wire: WireServer) -> None:
    cli.env["ANTHROPIC_API_KEY"] = "sk-ant-test"
    cli.env["ANTHROPIC_BASE_URL"] = wire.url
    wire.queue(aw.streamed([{"type": "text", "text": '{"city": "Paris"}'}], "end_turn", aw.usage(20, 6)))
    done = cli("run", "Capital of France?", "--model", f"anthropic:{aw.MODEL}", "--schema", '{"city": "str"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"city": "Paris"}
    assert len(wire.requests) == 1  # right the first time: no retry
    assert '"city": {"type": "string"}' in aw.uncached(wire.requests[0].json)["system"]


def test_a_bad_schema_is_one_line_before_any_request(cli: Cli, wire: WireServer) -> None:
    cases = {
        '{"name": "strr"}': "--schema (inline) field 'name': unknown type 'strr'",
        '{"type": "object", "properties": {"a": {"type": "integer", "minimum": "x"}}}': (
            "--schema (inline): not a valid JSON Schema: 'x' is not of type 'number' (at properties/a/minimum)"
        ),
        '{"name": ': "--schema (inline): not JSON (Expecting value at line 1 column 10)",
        "missing.json": "--schema 'missing.json': no such file",
        "[1, 2]": "--schema (inline): give a JSON object",
    }
    for value, says in cases.items():
        done = cli("run", "Hi", "--model", MODEL, "--schema", value)
        assert done.returncode == 2, (value, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {says}"), (value, lines)
    assert wire.requests == []


def _sent_schema(wire: WireServer, index: int) -> dict[str, object] | None:
    response_format = wire.requests[index].json.get("response_format")
    return None if response_format is None else response_format["json_schema"]["schema"]


def test_chat_takes_schema_and_prints_each_answer_as_json(cli: Cli, wire: WireServer) -> None:
    wire.queue(text_reply('{"city": "Paris"}'), text_reply('{"city": "Berlin"}'))
    done = cli("chat", "--model", MODEL, "--schema", '{"city": "str"}', input="France?\nGermany?\n")
    assert done.returncode == 0, done.stderr
    decoder = json.JSONDecoder()
    first, end = decoder.raw_decode(done.stdout)
    second, _ = decoder.raw_decode(done.stdout[end:].lstrip())
    assert (first, second) == ({"city": "Paris"}, {"city": "Berlin"})
    assert done.stdout.count('"city"') == 2  # the raw answers are not shown besides the JSON
    for index in (0, 1):
        assert _sent_schema(wire, index) == {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }


def test_a_session_remembers_its_schema_and_a_new_one_replaces_it(cli: Cli, wire: WireServer) -> None:
    wire.queue(
        text_reply('{"city": "Paris"}'),
        text_reply('{"city": "Berlin"}'),
        text_reply('{"country": "Spain"}'),
        text_reply('{"country": "Italy"}'),
        text_reply("Plain words now."),
        text_reply("Still plain."),
    )
    first = cli("run", "Capital of France?", "--model", MODEL, "--schema", '{"city": "str"}')
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"city": "Paris"}

    # -c goes on with the schema without the flag, and says so
    again = cli("run", "-c", "Capital of Germany?")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {"city": "Berlin"}
    assert "restored from the session: output schema" in again.stderr
    assert _sent_schema(wire, 1) == _sent_schema(wire, 0)

    # another --schema replaces it, says so, and is remembered in its place (chat --session too)
    session_id = json.loads(cli("sessions", "list", "--json").stdout)[0]["id"]
    other = cli("run", "--session", session_id, "Where is Madrid?", "--schema", '{"country": "str"}')
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout) == {"country": "Spain"}
    assert "--schema replaces the session's output schema" in other.stderr
    chat = cli("chat", "--session", session_id, input="Where is Rome?\n")
    assert chat.returncode == 0, chat.stderr
    assert json.loads(chat.stdout) == {"country": "Italy"}
    country = {"type": "object", "properties": {"country": {"type": "string"}}, "required": ["country"]}
    assert _sent_schema(wire, 2) == _sent_schema(wire, 3) == country
    shown = cli("sessions", "show", session_id)
    assert 'schema: {"type": "object", "properties": {"country"' in shown.stdout

    # --no-schema: plain text from now on
    plain = cli("run", "-c", "Say something", "--no-schema")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == "Plain words now.\n"
    assert "the session's output schema is forgotten" in plain.stderr
    later = cli("run", "-c", "And again")
    assert later.stdout == "Still plain.\n"
    assert "output schema" not in later.stderr
    assert _sent_schema(wire, 4) is None and _sent_schema(wire, 5) is None


def test_schema_and_no_schema_together_is_a_usage_error(cli: Cli, wire: WireServer) -> None:
    done = cli("run", "Hi", "--model", MODEL, "--schema", '{"a": "int"}', "--no-schema")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: --schema and --no-schema contradict each other: give one"
    assert wire.requests == []
