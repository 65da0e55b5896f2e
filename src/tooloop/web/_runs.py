"""Fork and re-run from the page: the agent named in ``tooloop.toml`` runs on the new branch.

A run goes on in the server's event loop after the request that started it has answered; its
page follows it live from the store. Nothing here changes what is stored except by adding: the
store's ``fork`` copies, the agent appends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..agent import Agent
from ..config import Config, find_config_file, load_config
from ..errors import ConfigurationError, ToolloopError
from ..loop.result import ApprovalDecision, ApprovalRequest
from ..messages import ToolCallMessage, ToolCallStatus
from ..store import BaseStore

__all__ = ["RunState", "Runs"]

_log = logging.getLogger("tooloop.web")


@dataclass(frozen=True, slots=True)
class RunState:
    """What the page says about a run it started."""

    agent: str
    status: str
    """``running``, ``finished`` or ``failed``."""
    detail: str = ""


class Runs:
    """The runs this server started, by session id."""

    def __init__(self, store: BaseStore, config_path: Path | None):
        self._store = store
        self._config_path = config_path
        self.states: dict[str, RunState] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def mark(self, session_id: str) -> str:
        """The state of the run this server started on ``session_id`` ("" when it started none)."""
        state = self.states.get(session_id)
        return state.status if state is not None else ""

    def agent_names(self) -> tuple[str, ...]:
        """The agents of the configuration file (none when there is no file or it cannot be read)."""
        try:
            config = self._config()
        except ConfigurationError:
            return ()
        return config.agent_names if config is not None else ()

    def config_problem(self) -> str | None:
        """Why no agent can run from the page, or None."""
        try:
            config = self._config()
        except ConfigurationError as exc:
            return str(exc)
        if config is None:
            return "no tooloop.toml found: forks are made, but nothing runs them"
        return None if config.agent_names else f"{config.path} names no [agents]"

    def _config(self) -> Config | None:
        path = self._config_path or find_config_file()
        return load_config(path) if path is not None else None

    def _agent(self, name: str, model: str | None) -> Agent:
        config = self._config()
        if config is None or name not in config.agent_names:
            raise ConfigurationError(f"no agent {name!r} in tooloop.toml")
        agent = config.agent(name)
        return agent.with_model(model) if model else agent

    async def fork_and_run(self, session_id: str, at: int, *, agent: str | None, prompt: str, model: str) -> str:
        """Fork ``session_id`` keeping ``at`` messages and, with an agent, run it there; the new id."""
        chosen = model.strip() or None
        built = self._agent(agent, chosen) if agent else None  # a bad name fails before forking
        new_id = await self._store.fork(session_id, at)
        if built is None or agent is None:
            return new_id
        info = await self._store.get_session(new_id)
        ran_by = {"agent": agent, **({"agent_model": chosen} if chosen else {})}
        await self._store.set_metadata(new_id, metadata={**info.metadata, **ran_by})
        self._start(new_id, agent, built, prompt.strip() or None, ())
        return new_id

    async def answer(self, session_id: str, decisions: Mapping[str, bool]) -> None:
        """Resume ``session_id`` with a decision for each of its calls waiting for one."""
        info = await self._store.get_session(session_id)
        name = info.metadata.get("agent")
        if not isinstance(name, str):
            raise ConfigurationError("this session was not run from the page: no agent is known to resume it")
        pending = [
            m
            for m in await self._store.load(session_id)
            if isinstance(m, ToolCallMessage) and m.status is ToolCallStatus.PENDING
        ]
        approvals: list[ApprovalDecision] = []
        for call in pending:
            request = ApprovalRequest(call.tool_call_id, call.tool_name, call.arguments)
            if call.tool_call_id in decisions:
                approvals.append(request.approve() if decisions[call.tool_call_id] else request.deny())
        model = info.metadata.get("agent_model")  # the model chosen when the fork was made
        self._start(
            session_id, name, self._agent(name, model if isinstance(model, str) else None), None, tuple(approvals)
        )

    def _start(
        self, session_id: str, name: str, agent: Agent, prompt: str | None, approvals: tuple[ApprovalDecision, ...]
    ) -> None:
        self.states[session_id] = RunState(name, "running")
        task = asyncio.create_task(self._run(session_id, name, agent, prompt, approvals))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(
        self, session_id: str, name: str, agent: Agent, prompt: str | None, approvals: tuple[ApprovalDecision, ...]
    ) -> None:
        try:
            result = await agent.with_session(session_id, self._store).run(prompt, approvals=approvals)
        except ToolloopError as exc:
            self.states[session_id] = RunState(name, "failed", f"{type(exc).__name__}: {exc}")
            return
        except Exception as exc:  # a tool or a model of the user's failing must not kill the server
            _log.exception("run of session %s failed", session_id)
            self.states[session_id] = RunState(name, "failed", f"{type(exc).__name__}: {exc}")
            return
        self.states[session_id] = RunState(name, "finished", result.stop_reason.value)

    async def close(self) -> None:
        """Cancel the runs still going (their sessions keep what was written)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
