"""``tooloop.toml``: a valid file builds the agent; each kind of mistake says where and what."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import tooloop
from tooloop import Agent, ConfigurationError, ModelResponse, ToolCall, get_model
from tooloop.config import find_config_file, load_config
from tooloop.mcp import MCPServer

from ..mcp.peers import TIME_SERVER, need

VALID = """
[models.fast]
provider = "test"
model = "echo"
temperature = 0.2
max_tokens = 300
system = "You are terse."

[models.remote]
provider = "openai-compatible"
model = "qwen3"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "TOOLOOP_TEST_REMOTE_KEY"

[mcp_servers.time]
command = "{time_server}"
prefix = "time_"
exclude = ["convert_time"]
timeout = 20

[mcp_servers.web]
url = "http://127.0.0.1:9/mcp"
headers = {{ Authorization = "Bearer ${{TOOLOOP_TEST_WEB_TOKEN}}" }}

[agents.helper]
model = "fast"
max_tokens = 500
tools = ["tests.config.sample_tools:add"]
mcp_servers = ["time"]
exclude_tools = ["time_get_current_time"]
limits = {{ max_turns = 7, tool_timeout = 30 }}
output_type = "tests.config.sample_tools:Answer"
approve = "destructive"
approver = "tests.config.sample_tools:approve_everything"

[agents.plain]
model = "test:echo"
system = "Plain."
"""


def write(tmp_path: Path, text: str, name: str = "tooloop.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def valid(tmp_path: Path) -> Path:
    return write(tmp_path, VALID.format(time_server=need(TIME_SERVER)))


async def test_a_valid_file_builds_the_agent(valid: Path) -> None:
    agent = tooloop.load_agent("helper", path=valid)
    assert isinstance(agent, Agent)
    assert agent.system == "You are terse."
    assert agent.limits.max_turns == 7 and agent.limits.tool_timeout == 30
    assert [t.name for t in agent.tools] == ["add"]
    (server,) = agent.tool_sources
    assert isinstance(server, MCPServer)
    assert (server.name, server.prefix, server.timeout, server.approve) == ("time", "time_", 20, "destructive")
    assert server.exclude == frozenset({"convert_time"})
    config = agent._resolved()
    assert config.settings.temperature == 0.2 and config.settings.max_tokens == 500  # the agent overrides
    assert config.output is not None and "time_get_current_time" in config.denied
    try:
        async with agent:
            offered = await server.list_tools()
            assert [t.name for t in offered] == ["time_get_current_time"]  # denied for this agent, though
            result = await agent.with_output_type(None).run("hello")
    finally:
        await agent.aclose()
    assert [c.tool_name for c in result.transcript.tool_invocations] == ["add"]  # the test model calls each tool


def test_found_in_the_project_folder_and_its_parents(valid: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nested = valid.parent / "a" / "b"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    monkeypatch.delenv("TOOLOOP_CONFIG", raising=False)
    assert find_config_file() == valid
    assert tooloop.load_agent("plain").system == "Plain."


def test_found_in_the_user_config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".config" / "tooloop").mkdir(parents=True)
    user_file = write(home / ".config" / "tooloop", '[agents.mine]\nmodel = "test:echo"\n')
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("TOOLOOP_CONFIG", raising=False)
    assert find_config_file() == user_file
    assert tooloop.load_agent("mine").model.name == "test:echo"


def test_an_explicit_path_by_environment(valid: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path.parent)
    monkeypatch.setenv("TOOLOOP_CONFIG", str(valid))
    assert load_config().agent_names == ("helper", "plain")


def test_at_name_model_strings_read_the_models_table(valid: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLOOP_CONFIG", str(valid))
    model = get_model("@fast")
    assert model.name == "test:echo"
    agent = Agent("@fast")
    assert agent.system == "You are terse." and agent._resolved().settings.max_tokens == 300
    with pytest.raises(ConfigurationError, match="TOOLOOP_TEST_REMOTE_KEY, which is not set"):
        get_model("@remote")
    monkeypatch.setenv("TOOLOOP_TEST_REMOTE_KEY", "from-the-environment")
    assert get_model("@remote").name == "qwen3"
    with pytest.raises(ConfigurationError, match=r"no \[models.nothing\] in tooloop.toml"):
        get_model("@nothing")


async def test_headers_read_environment_variables(valid: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(valid)
    with pytest.raises(ConfigurationError) as caught:
        config.mcp_server("web")
    assert str(caught.value) == (
        f"{valid}: [mcp_servers.web] key 'headers.Authorization': the environment variable "
        "TOOLOOP_TEST_WEB_TOKEN is not set"
    )
    monkeypatch.setenv("TOOLOOP_TEST_WEB_TOKEN", "t0ken")
    assert config.mcp_server("web")._spec.headers == {"Authorization": "Bearer t0ken"}  # type: ignore[union-attr]


MISTAKES = [
    (
        '[models.m]\nprovider = "openai"\nmodel = "gpt-4.1"\napi_key = "sk-abc123abc123abc123"\n',
        "[models.m]: 'api_key': a key is never written in the file; set api_key_env",
    ),
    (
        '[mcp_servers.s]\ncommand = "x"\nenv = { GITHUB_TOKEN = "ghp_abcdefabcdef" }\n',
        "[mcp_servers.s] key 'env': env 'GITHUB_TOKEN' holds a literal secret; write a reference to an "
        'environment variable instead, e.g. GITHUB_TOKEN = "${GITHUB_TOKEN}"',
    ),
    (
        '[mcp_servers.s]\nurl = "http://x/mcp"\nheaders = { Authorization = "Bearer abcdefabcdefabcdef" }\n',
        "[mcp_servers.s] key 'headers': header 'Authorization' holds a literal secret",
    ),
    ('[agents.a]\nmodel = "test:echo"\nmax_turn = 3\n', "[agents.a] key 'max_turn': unknown key"),
    ('[agents.a]\nsystem = "hi"\n', "[agents.a] key 'model': required key is missing"),
    (
        '[agents.a]\nmodel = "test:echo"\nlimits = { max_turns = "many" }\n',
        "[agents.a] key 'limits.max_turns': Input should be a valid integer, unable to parse string as an "
        "integer (got 'many')",
    ),
    (
        '[agents.a]\nmodel = "test:echo"\nlimits = { max_turns = 0 }\n',
        "[agents.a] key 'limits.max_turns': Input should be greater than or equal to 1",
    ),
    (
        '[agents.a]\nmodel = "test:echo"\ntools = ["no_colon"]\n',
        "[agents.a] key 'tools': 'no_colon' is not an import path",
    ),
    ('[mcp_servers.s]\nprefix = "x_"\n', "[mcp_servers.s]: give either command (a stdio server) or url"),
    (
        '[mcp_servers.s]\ncommand = "x"\napprove = "sometimes"\n',
        "[mcp_servers.s] key 'approve': Input should be 'never', 'always' or 'destructive'",
    ),
    (
        '[models.m]\nprovider = "openai"\nmodel = "x"\napi_key_env = "sk-live-123"\n',
        "[models.m] key 'api_key_env': api_key_env must be the NAME of an environment variable",
    ),
    ("[agents.a\nmodel = 1\n", "not valid TOML"),
    ("[tables]\nx = 1\n", "key 'tables': unknown key"),
]


@pytest.mark.parametrize(("text", "expected"), MISTAKES)
def test_each_mistake_says_file_table_key_and_what_was_expected(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigurationError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert expected in message


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ('model = "nope"', "[agents.a] key 'model': 'nope' is neither a name from [models] (defined: none)"),
        (
            'model = "test:echo"\ntools = ["tests.config.sample_tools:missing"]',
            "key 'tools': module 'tests.config.sample_tools' has no 'missing'",
        ),
        ('model = "test:echo"\ntools = ["no.such.module:f"]', "key 'tools': cannot import 'no.such.module'"),
        (
            'model = "test:echo"\nmcp_servers = ["ghost"]',
            "key 'mcp_servers': no [mcp_servers.ghost] table (defined: none)",
        ),
    ],
)
def test_mistakes_found_while_building_the_agent(tmp_path: Path, agent: str, expected: str) -> None:
    path = write(tmp_path, f"[agents.a]\n{agent}\n")
    with pytest.raises(ConfigurationError) as caught:
        tooloop.load_agent("a", path=path)
    assert str(caught.value).startswith(f"{path}: [agents.a]")
    assert expected in str(caught.value)


def test_unknown_agent_and_missing_file(tmp_path: Path, valid: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"no \[agents.ghost\] table \(agents defined: helper, plain\)"):
        tooloop.load_agent("ghost", path=valid)
    with pytest.raises(ConfigurationError, match="cannot read the configuration file"):
        tooloop.load_agent("a", path=tmp_path / "absent.toml")


def test_references_are_not_secrets(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[mcp_servers.s]\ncommand = "x"\nenv = { API_KEY = "${MY_KEY}", MODE = "fast" }\n'
        '[mcp_servers.h]\nurl = "http://x/mcp"\nheaders = { Authorization = "Bearer ${TOKEN}" }\n',
    )
    assert sorted(load_config(path).data.mcp_servers) == ["h", "s"]


def test_a_scripted_tool_call_through_a_loaded_agent(valid: Path) -> None:
    agent = tooloop.load_agent("plain", path=valid)
    assert (
        agent.with_model(
            __import__("tooloop.testing", fromlist=["ScriptedModel"]).ScriptedModel(
                [ModelResponse(tool_calls=(ToolCall("c", "x", {}),)), "ok"]
            )
        )
        .run_sync("go")
        .transcript.final_text
        == "ok"
    )


def test_every_limit_can_be_set_in_the_file() -> None:
    from dataclasses import fields

    from tooloop import Limits
    from tooloop.config._schema import LimitsTable

    assert set(LimitsTable.model_fields) == {f.name for f in fields(Limits)}


def test_an_agent_without_a_policy_uses_its_servers_own_or_never(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        [mcp_servers.strict]
        command = "unused-server"
        approve = "always"

        [mcp_servers.plain]
        command = "unused-server"

        [agents.a]
        model = "test:echo"
        mcp_servers = ["strict", "plain"]
        """,
    )
    agent = tooloop.load_agent("a", path=path)
    assert {s.name: s.approve for s in agent.tool_sources} == {"strict": "always", "plain": "never"}  # type: ignore[attr-defined]


def test_a_servers_own_policy_is_not_replaced_by_a_fallback(tmp_path: Path) -> None:
    path = write(tmp_path, '[mcp_servers.s]\ncommand = "unused-server"\napprove = "always"\n')
    config = load_config(path)
    assert config.mcp_server("s", approve="never").approve == "always"
    assert (
        load_config(write(tmp_path, '[mcp_servers.s]\ncommand = "x"\n')).mcp_server("s", approve="destructive").approve
        == "destructive"
    )


BROKEN_MODULES = {
    "tooloop_test_raises_on_import": 'raise RuntimeError("no database at import time")\n',
    "tooloop_test_syntax_error": "def f(:\n    pass\n",
    "tooloop_test_odd_values": (
        "def add(a: int) -> int:\n    'Add.'\n    return a\n\n\n"
        "def other(a: int) -> int:\n    'Other.'\n    return a\n\n\nother.__name__ = 'add'\n"
        "NOT_A_TOOL = 42\nA_STRING = 'int'\n"
    ),
}


@pytest.fixture
def broken_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "modules"
    folder.mkdir()
    for name, text in BROKEN_MODULES.items():
        (folder / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(folder))
    return folder


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        (
            'tools = ["tooloop_test_raises_on_import:f"]',
            "key 'tools': importing 'tooloop_test_raises_on_import' failed: RuntimeError: no database at import time",
        ),
        (
            'tools = ["tooloop_test_syntax_error:f"]',
            "key 'tools': importing 'tooloop_test_syntax_error' failed: SyntaxError: invalid syntax",
        ),
        (
            'output_type = "tooloop_test_odd_values:A_STRING"',
            "key 'output_type': 'tooloop_test_odd_values:A_STRING' is the string 'int', not a type",
        ),
        (
            'tools = ["tooloop_test_odd_values:NOT_A_TOOL"]',
            "key 'tools': 'tooloop_test_odd_values:NOT_A_TOOL' is not a tool (a tool must be a function or a Tool",
        ),
        (
            'tools = ["tooloop_test_odd_values:add", "tooloop_test_odd_values:other"]',
            "key 'tools': 'tooloop_test_odd_values:add' and 'tooloop_test_odd_values:other' are both named 'add'",
        ),
        (
            'tools = ["tooloop_test_odd_values:add"]\nexclude_tools = ["ad"]',
            "key 'exclude_tools': 'ad' is not a tool of this agent (its tools: add)",
        ),
        (
            'model = "opena:gpt-4.1"',
            "key 'model': unknown provider 'opena' in 'opena:gpt-4.1' (did you mean 'openai'?)",
        ),
        ('model = "@nope"', "key 'model': '@nope' names no [models.nope] table in this file (defined: none)"),
    ],
)
def test_a_broken_tools_module_or_wrong_name_says_file_table_and_key(
    tmp_path: Path, broken_modules: Path, agent: str, expected: str
) -> None:
    model = "" if agent.startswith("model") else 'model = "test:echo"\n'
    path = write(tmp_path, f"[agents.a]\n{model}{agent}\n")
    with pytest.raises(ConfigurationError) as caught:
        tooloop.load_agent("a", path=path)
    assert str(caught.value).startswith(f"{path}: [agents.a] key ")
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[mcp_servers.s]\ncommand = "x"\n[agents.a]\nmodel = "test:echo"\nmcp_servers = ["s", "s"]\n',
            "[agents.a] key 'mcp_servers': 's' is listed twice; list each once",
        ),
        (
            '[agents.a]\nmodel = "test:echo"\nstore = "sqlite:x.db"\n',
            "[agents.a] key 'store': unknown store URL 'sqlite:x.db': use sqlite:///path.db",
        ),
    ],
)
def test_a_server_listed_twice_or_a_malformed_store_url_is_refused_on_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, text)
    with pytest.raises(ConfigurationError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert expected in str(caught.value)
    assert not (tmp_path / "sqlite:x.db").exists()


def test_a_store_url_without_its_slashes_is_refused_by_the_agent_and_open_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tooloop.store import open_store

    monkeypatch.chdir(tmp_path)
    for wrong in ("sqlite:x.db", "sqlite:/x.db", "postgresql:db", "x.db"):
        with pytest.raises(ConfigurationError, match=f"unknown store URL {wrong!r}"):
            Agent("test:echo", store=wrong)
        with pytest.raises(ConfigurationError, match=f"unknown store URL {wrong!r}"):
            open_store(wrong)
    assert list(tmp_path.iterdir()) == []


def test_a_latin1_file_is_reported_as_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "tooloop.toml"
    path.write_bytes('[agents.a]\nmodel = "test:echo"\nsystem = "Réponds en français."\n'.encode("latin-1"))
    with pytest.raises(ConfigurationError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}: not UTF-8 text (byte 0xe9 on line 3); TOML files are UTF-8: save it with that encoding"
    )


def test_at_name_in_a_loaded_file_reads_that_files_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write(elsewhere, '[models.fast]\nprovider = "openai"\nmodel = "gpt-4.1"\napi_key_env = "TOOLOOP_TEST_UNSET"\n')
    monkeypatch.chdir(elsewhere)  # the working directory's file has another [models.fast]
    monkeypatch.delenv("TOOLOOP_CONFIG", raising=False)
    loaded = write(
        tmp_path,
        '[models.fast]\nprovider = "test"\nmodel = "echo"\nsystem = "From the loaded file."\n'
        '[agents.a]\nmodel = "@fast"\n',
    )
    agent = tooloop.load_agent("a", path=loaded)
    assert agent.model.name == "test:echo"
    assert agent.system == "From the loaded file."


async def test_an_excluded_name_that_no_server_tool_has_is_an_error_not_ignored(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        [mcp_servers.time]
        command = "{need(TIME_SERVER)}"
        prefix = "time_"

        [agents.a]
        model = "test:echo"
        mcp_servers = ["time"]
        exclude_tools = ["time_get_curent_time"]
        """,
    )
    agent = tooloop.load_agent("a", path=path)
    try:
        async with agent:
            with pytest.raises(ConfigurationError) as caught:
                await agent.run("what time is it?")
    finally:
        await agent.aclose()
    assert str(caught.value).startswith(
        "denied_tools (exclude_tools in tooloop.toml) names 'time_get_curent_time', which is no tool of this "
        "agent nor of its tool sources (time); its tools: time_convert_time, time_get_current_time"
    )
    server = MCPServer.stdio(need(TIME_SERVER), prefix="time_")
    typo = Agent("test:echo", tools=[server], allowed_tools=["time_convert_tim"])
    try:
        with pytest.raises(ConfigurationError, match=r"^allowed_tools names 'time_convert_tim', which is no tool"):
            await typo.run("convert")
        right = await Agent("test:echo", tools=[server], allowed_tools=["time_convert_time"]).run("convert")
        assert right.error is None
    finally:
        await server.aclose()


def test_runaway_guards_are_set_or_turned_off_in_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        [agents.a]
        model = "test:echo"
        limits = { max_repeats = 3, max_repeated_errors = false, max_empty_responses = 0, retry_cut_calls = false }
        """,
    )
    limits = tooloop.load_agent("a", path=path).limits
    assert (limits.max_repeats, limits.max_repeated_errors) == (3, None)
    assert (limits.max_empty_responses, limits.retry_cut_calls) == (0, False)
    for wrong in ("max_repeats = 0", "max_repeats = true", "max_empty_responses = -1", 'retry_cut_calls = "no"'):
        bad = write(tmp_path, f'[agents.a]\nmodel = "test:echo"\nlimits = {{ {wrong} }}\n')
        with pytest.raises(ConfigurationError, match=r"\[agents.a\] key 'limits\.") as caught:
            tooloop.load_agent("a", path=bad)
        assert "Traceback" not in str(caught.value)


def test_tool_search_is_set_in_the_file(tmp_path: Path) -> None:
    from tooloop import ToolSearch

    cases = {
        "tool_search = true": ToolSearch(),
        'tool_search = "local"': ToolSearch(mode="local"),
        'tool_search = "native"\ntool_search_threshold = 12': ToolSearch(threshold=12),
        "tool_search_threshold = 5": ToolSearch(threshold=5),
        "tool_search = false\ntool_search_threshold = 5": None,
        "": None,
    }
    for lines, expected in cases.items():
        path = write(tmp_path, f'[agents.a]\nmodel = "test:echo"\n{lines}\n')
        assert tooloop.load_agent("a", path=path)._resolved().tool_search == expected, lines
    for wrong in ('tool_search = "remote"', "tool_search_threshold = -1"):
        bad = write(tmp_path, f'[agents.a]\nmodel = "test:echo"\n{wrong}\n')
        with pytest.raises(ConfigurationError, match=r"\[agents.a\] key 'tool_search"):
            tooloop.load_agent("a", path=bad)
