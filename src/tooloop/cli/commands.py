"""The commands of ``tooloop``: options, help and examples; the work is in the modules they call."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .app import (
    AgentName,
    ApiKeyEnv,
    ApproveOption,
    Attach,
    AttachType,
    BaseUrl,
    CliCommand,
    Debug,
    Fragment,
    JsonFlag,
    MaxTurns,
    Mcp,
    McpUrl,
    Model,
    NoSchema,
    NoStream,
    Options,
    Quiet,
    Schema,
    Store,
    System,
    Timeout,
    Tools,
    app,
    finish,
    option_pairs,
)
from .approvals import Approve
from .exits import ExitCode, fail
from .setup import AgentOptions, check_positive
from .terminal import Terminal

__all__: list[str] = []


def _examples(*lines: str) -> str:
    return "[bold]Examples[/bold]\n\n" + "\n\n".join(f"  {line}" for line in lines)


def _agent_options(
    model: str | None,
    system: str | None,
    tools: list[str] | None,
    max_turns: int | None,
    timeout: float | None,
    no_stream: bool,
    sources: tuple[str | None, list[str] | None, list[str] | None] = (None, None, None),
    provider: tuple[list[str] | None, str | None, str | None] = (None, None, None),
    schema: dict[str, Any] | None = None,
) -> AgentOptions:
    check_positive("--max-turns", max_turns)
    check_positive("--timeout", timeout)
    agent, mcp, mcp_url = sources
    options, base_url, api_key_env = provider
    return AgentOptions(
        options=option_pairs(options),
        base_url=base_url,
        api_key_env=api_key_env,
        model=model,
        system=system,
        tools=tuple(tools or ()),
        max_turns=max_turns,
        timeout=timeout,
        stream=not no_stream,
        agent=agent,
        mcp=tuple(mcp or ()),
        mcp_urls=tuple(mcp_url or ()),
        schema=schema,
    )


def _schema(value: str | None, forget: bool) -> dict[str, Any] | None:
    """``--schema`` read and checked; ``{}`` for ``--no-schema``; None when neither is given."""
    if value is not None and forget:
        fail("--schema and --no-schema contradict each other: give one")
    if forget:
        return {}
    if value is None:
        return None
    from .schema import read_schema

    return read_schema(value)


@app.command(
    cls=CliCommand,
    epilog=_examples(
        'tooloop run "What is 2 + 40?" --model openai:gpt-4.1-mini',
        'cat notes.md | tooloop run "Summarise these notes"',
        'tooloop run "How big is src/?" --tool examples/repo_tools.py:list_files --tool mypkg.tools:count_lines',
        'tooloop run -c "And the second one?"',
        'tooloop run "What time is it in Tokyo?" --mcp "uvx mcp-server-time" --approve all',
        'tooloop run "Review my last commit" --agent reviewer       # [agents.reviewer] of tooloop.toml',
        'tooloop run "Clean up the build folder" --approve none --json | jq .stop_reason',
        'tooloop run "What is in this picture?" -a photo.jpg',
        'tooloop run "Summarise the report" -a https://example.com/report.pdf -f notes.md',
        """tooloop run "Who wrote Dune, and when?" --schema '{"author": "str", "year": "int"}'""",
    ),
)
def run(
    prompt: Annotated[
        str | None, typer.Argument(metavar="PROMPT", help="The question; piped standard input is appended.")
    ] = None,
    model: Model = None,
    option: Options = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    agent: AgentName = None,
    system: System = None,
    tool: Tools = None,
    mcp: Mcp = None,
    mcp_url: McpUrl = None,
    session: Annotated[
        str | None, typer.Option("--session", metavar="ID", help="Continue this stored session, or start it.")
    ] = None,
    continue_: Annotated[bool, typer.Option("--continue", "-c", help="Continue the most recent session.")] = False,
    max_turns: MaxTurns = None,
    timeout: Timeout = None,
    approve: ApproveOption = Approve.ASK,
    attach: Attach = None,
    attach_type: AttachType = None,
    fragment: Fragment = None,
    json: JsonFlag = False,
    encoding: Annotated[
        str, typer.Option("--encoding", metavar="NAME", help="The encoding of piped input and the prompt.")
    ] = "utf-8",
    schema: Schema = None,
    no_schema: NoSchema = False,
    store: Store = None,
    no_stream: NoStream = False,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Ask once: the answer streams to stdout, tool calls and progress to stderr.

    Every run is recorded in a session (its id is printed on stderr) that --session ID or -c continues.
    With --json, stdout holds one JSON object: text, stop_reason, session_id, usage, tool_calls,
    pending_approvals, error, messages.
    """
    from .attach import read_attachments
    from .run import RunOptions, read_prompt, run_command

    async def work() -> ExitCode:
        parts, _ = read_attachments(attach or (), fragment or (), attach_type, encoding)
        options = RunOptions(
            prompt=parts.prompt(read_prompt(prompt, encoding=encoding)),
            agent=_agent_options(
                model,
                system,
                tool,
                max_turns,
                timeout,
                no_stream,
                (agent, mcp, mcp_url),
                (option, base_url, api_key_env),
                _schema(schema, no_schema),
            ),
            session=session,
            continue_last=continue_,
            approve=approve,
            json=json,
            store=store,
        )
        return await run_command(options, Terminal(quiet=quiet))

    finish(work, debug=debug, quiet=quiet)


@app.command(
    cls=CliCommand,
    epilog=_examples(
        "tooloop chat --model anthropic:claude-sonnet-4-5",
        "tooloop chat --tool mypkg.tools:search --approve ask",
        "tooloop chat --session 3f2a9c1e07b4",
        "tooloop chat --agent researcher --mcp-url http://127.0.0.1:8000/mcp",
        "tooloop chat -a diagram.png -f design.md     # both go with the first message",
        """tooloop chat --schema '{"city": "str", "country": "str"}'   # every answer as JSON""",
    ),
)
def chat(
    model: Model = None,
    option: Options = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    agent: AgentName = None,
    system: System = None,
    tool: Tools = None,
    mcp: Mcp = None,
    mcp_url: McpUrl = None,
    session: Annotated[
        str | None, typer.Option("--session", metavar="ID", help="Continue this stored session, or start it.")
    ] = None,
    continue_: Annotated[bool, typer.Option("--continue", "-c", help="Continue the most recent session.")] = False,
    max_turns: MaxTurns = None,
    timeout: Timeout = None,
    approve: ApproveOption = Approve.ASK,
    attach: Attach = None,
    attach_type: AttachType = None,
    fragment: Fragment = None,
    schema: Schema = None,
    no_schema: NoSchema = False,
    store: Store = None,
    no_stream: NoStream = False,
    debug: Debug = False,
) -> None:
    """Talk with a model: streamed markdown answers, every tool call shown, approvals asked y/n/always.

    Type while a turn runs to steer it: Enter sends the line to the model at its next step.
    Ctrl-C cancels the current turn and keeps the session; Ctrl-C twice at the prompt (or Ctrl-D,
    or /exit) quits. Type /help for the commands (/model, /tools, /usage, /new, /exit).
    Attachments (-a) and fragments (-f) go with the first message.
    """
    from .attach import read_attachments
    from .chat import ChatOptions, chat_command

    async def work() -> ExitCode:
        if "-" in (attach or ()):
            fail("tooloop chat reads your messages from standard input: attach files or URLs, not -a -")
        parts, _ = read_attachments(attach or (), fragment or (), attach_type, "utf-8")
        options = ChatOptions(
            attachments=parts,
            agent=_agent_options(
                model,
                system,
                tool,
                max_turns,
                timeout,
                no_stream,
                (agent, mcp, mcp_url),
                (option, base_url, api_key_env),
                _schema(schema, no_schema),
            ),
            session=session,
            continue_last=continue_,
            approve=approve,
            store=store,
        )
        return await chat_command(options, Terminal())

    finish(work, debug=debug)


@app.command(
    cls=CliCommand,
    epilog=_examples("tooloop models", "tooloop models --json", "tooloop models --options openai:gpt-4.1"),
)
def models(
    options: Annotated[
        str | None,
        typer.Option("--options", metavar="PROVIDER:MODEL", help="The -o options this model accepts."),
    ] = None,
    json: JsonFlag = False,
    debug: Debug = False,
) -> None:
    """The providers and configured models, and whether each one's key variable is set."""
    from .info import model_options_command, models_command

    if options is not None:
        spec = options
        finish(lambda: model_options_command(Terminal(), spec, as_json=json), debug=debug)
    finish(lambda: models_command(Terminal(), as_json=json), debug=debug)


@app.command(
    cls=CliCommand,
    epilog=_examples(
        "tooloop tools --tool examples/repo_tools.py:list_files",
        "tooloop tools --tool mypkg.tools:search --json",
        'tooloop tools --mcp "uvx mcp-server-time"',
        "tooloop tools --agent researcher",
    ),
)
def tools(
    agent: AgentName = None,
    tool: Tools = None,
    mcp: Mcp = None,
    mcp_url: McpUrl = None,
    json: JsonFlag = False,
    debug: Debug = False,
) -> None:
    """The tools a model would see (MCP servers' included): names, descriptions, parameter schemas."""
    from .info import tools_command

    options = _agent_options(None, None, tool, None, None, False, (agent, mcp, mcp_url))
    finish(lambda: tools_command(Terminal(), options, as_json=json), debug=debug)


@app.command(cls=CliCommand, epilog=_examples("tooloop agents", "tooloop agents --json"))
def agents(json: JsonFlag = False, debug: Debug = False) -> None:
    """The agents of tooloop.toml (\\[agents.NAME]): model, instructions, tools, MCP servers."""
    from .info import agents_command

    finish(lambda: agents_command(Terminal(), as_json=json), debug=debug)


@app.command(cls=CliCommand, epilog=_examples("tooloop plugins", "tooloop plugins --json"))
def plugins(json: JsonFlag = False, debug: Debug = False) -> None:
    """Installed plugins: providers (tooloop.providers) and tools (tooloop.tools), and whether each loads."""
    from .info import plugins_command

    finish(lambda: plugins_command(Terminal(), as_json=json), debug=debug)


def _register_sessions() -> None:
    from .sessions import sessions_app

    app.add_typer(sessions_app, name="sessions")


_register_sessions()
