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
