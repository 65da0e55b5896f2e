"""Durable conversation turns on DBOS Transact: any worker finishes a dead worker's turn.

Install with ``pip install "tooloop[dbos]"``. One DBOS workflow runs one turn of one session;
its id is derived from the session and turn id, so submitting a turn twice is one turn. Turns
wait on a DBOS queue partitioned by session: across every worker, a session runs one turn at a
time, with global and per-worker limits on the rest. The tooloop store stays the only record of
the conversation; DBOS keeps the queue, ownership, recovery, retries and cancellation, and a
stream of each turn's events that another process can read.

Inside the workflow the whole turn is one DBOS step that runs the agent on its session with the
turn id. When the worker dies, the step runs again elsewhere: the prompt is not written twice
(the turn id), finished tool calls are not run again (the journal), and calls that were in
flight at the kill run again — tools with side effects must use ``ToolContext.idempotency_key``.
A worker that lost ownership (paused, then adopted by another) stops at its next write with
:class:`~tooloop.ConflictError`, which is never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbos import DBOS, DBOSClient, DBOSConfig, EnqueueOptions
from dbos._error import DBOSMaxStepRetriesExceeded, DBOSWorkflowCancelledError

from ..agent import Agent
from ..errors import (
    ConfigurationError,
    ConflictError,
    ProviderError,
    StoreError,
    StoreUnavailableError,
    ToolloopError,
)
from ..events import Event, TextDelta, ThinkingDelta
from ..loop.result import ApprovalDecision
from ..store._common import masked_url
from ..store.journal import SessionLease
from ._wire import TurnOutcome, event_to_dict, turn_workflow_id

__all__ = ["EVENTS_STREAM", "TURN_WORKFLOW", "DurableAgents", "DurableClient", "TurnHandle"]

TURN_WORKFLOW = "tooloop.turn"
"""The DBOS workflow name of a turn (a client enqueues it by this name)."""
EVENTS_STREAM = "events"
"""The DBOS stream key of a turn's events."""

_log = logging.getLogger("tooloop.durable")
_AGENTS: dict[str, Agent] = {}
_STEP: dict[str, Any] = {"max_attempts": 3, "interval_seconds": 1.0, "backoff_rate": 2.0}


def _retryable(error: BaseException) -> bool:
    """Retry what another attempt can fix; never a lost ownership or a mistake in the set-up."""
    if isinstance(error, ConflictError):
        return False  # another worker owns the session: retrying would fight it
    if isinstance(error, ProviderError | StoreError):
        return error.retryable  # a store that stayed unreachable: the next attempt resumes the turn
    return not isinstance(error, ToolloopError)  # a crash of the worker's own code: try again


class _Forwarder:
    """Sends a turn's events to its DBOS stream, text deltas merged to at most a few writes a second."""

    def __init__(self, interval: float = 0.25):
        self._interval = interval
        self._text: list[str] = []
        self._kind = ""
        self._since = 0.0

    async def send(self, event: Event) -> None:
        if isinstance(event, TextDelta | ThinkingDelta):
            if self._text and event.kind != self._kind:
                await self.flush()
            if not self._text:
                self._since = time.monotonic()
            self._kind = event.kind
            self._text.append(event.text)
            if time.monotonic() - self._since >= self._interval:
                await self.flush()
            return
        await self.flush()
        await DBOS.write_stream_async(EVENTS_STREAM, event_to_dict(event))

    async def flush(self) -> None:
        if self._text:
            text, self._text = "".join(self._text), []
            await DBOS.write_stream_async(EVENTS_STREAM, {"kind": self._kind, "text": text})


async def _advance(
    agent_name: str, session_id: str, prompt: str | None, turn_id: str, approvals: list[dict[str, Any]]
) -> dict[str, Any]:
    """The turn's one step: run the agent on the session with the turn id, forwarding events."""
    agent = _AGENTS.get(agent_name)
    if agent is None:
        raise ConfigurationError(f"no agent {agent_name!r} is registered in this worker: {sorted(_AGENTS)}")
    await DBOS.write_stream_async(EVENTS_STREAM, {"kind": "attempt", "attempt": uuid.uuid4().hex})
    decisions = [ApprovalDecision.from_dict(d) for d in approvals]
    forward = _Forwarder()
    async with agent.stream(prompt, session_id=session_id, turn_id=turn_id, approvals=decisions) as events:
        async for event in events:
            await forward.send(event)
        result = events.result
    await forward.flush()
    assert result is not None
    return TurnOutcome.of(result).to_dict()


@DBOS.workflow(name=TURN_WORKFLOW)
async def _turn(
    agent_name: str, session_id: str, prompt: str | None, turn_id: str, approvals: list[dict[str, Any]]
) -> dict[str, Any]:
    options: Any = {"name": "tooloop.advance", "retries_allowed": True, "should_retry": _retryable, **_STEP}
    options["preemptible"] = True  # cancel_workflow stops the turn at once, not at its next step
    try:
        outcome = await DBOS.run_step_async(options, _advance, agent_name, session_id, prompt, turn_id, approvals)
    except DBOSWorkflowCancelledError:
        raise
    except Exception as exc:
        error = _ended_by(exc)
        await DBOS.write_stream_async(EVENTS_STREAM, {"kind": "turn_failed", "error": _error_to_dict(error)})
        await DBOS.close_stream_async(EVENTS_STREAM)
        raise error from None
    await DBOS.write_stream_async(EVENTS_STREAM, {"kind": "turn_finished", **outcome})
    await DBOS.close_stream_async(EVENTS_STREAM)
    return outcome


def _ended_by(error: Exception) -> Exception:
    """The error that ended a turn: the last attempt's own, not DBOS's "retries exceeded"."""
    if isinstance(error, DBOSMaxStepRetriesExceeded) and error.errors:
        error = error.errors[-1]
    if isinstance(error, ToolloopError):
        error.transcript = None  # the store has it; DBOS would keep a copy with the turn's outcome
        error.partial_text = None
    return error


def _error_to_dict(error: BaseException) -> dict[str, str]:
    return {"type": type(error).__name__, "message": str(error)}


_FINAL_EVENTS = frozenset({"turn_finished", "turn_failed", "turn_cancelled"})


def _check_identity(executor_id: object, application_version: object) -> None:
    if not isinstance(executor_id, str) or not executor_id.strip() or executor_id == "local":
        raise ConfigurationError(
            f"executor_id={executor_id!r}: give every worker a unique, stable id (its pod or host name). "
            "DBOS recovers a dead worker's turns by this id; the default 'local' makes live workers "
            "re-run each other's turns"
        )
    if not isinstance(application_version, str) or not application_version.strip():
        raise ConfigurationError(
            f"application_version={application_version!r}: pin it (e.g. '2026-11-22'). DBOS only recovers "
            "turns of the same version, and its default changes with every code edit, orphaning pending turns"
        )


class DurableAgents:
    """The worker side: register agents, launch DBOS, serve turns from the queue.

    Every worker registers the same agents under the same names before :meth:`launch`; each
    agent needs a store (``Agent(..., store="postgresql://...")``) that every worker reaches.
    An agent without a :class:`~tooloop.store.SessionLease` gets one (``lease_ttl`` seconds), so
    an attempt of a turn owns its session until its last write: a resumed attempt waits for a
    cancelled one to finish writing, and a recovered one for a dead worker's lease to expire.
    """

    def __init__(
        self,
        *,
        app: str = "tooloop",
        queue: str = "tooloop-turns",
        worker_concurrency: int | None = 8,
        global_concurrency: int | None = None,
        max_attempts: int = 3,
        polling_interval: float = 0.5,
        lease_ttl: float = 15.0,
    ):
        for name, value in (("worker_concurrency", worker_concurrency), ("global_concurrency", global_concurrency)):
            if value is not None and (type(value) is not int or value < 1):
                raise ConfigurationError(f"DurableAgents({name}=...) must be a positive int or None, got {value!r}")
        self.app = app
        self.queue = queue
        self.worker_concurrency = worker_concurrency
        self.global_concurrency = global_concurrency
        self.max_attempts = max_attempts
        self.polling_interval = polling_interval
        self.lease = SessionLease(ttl=lease_ttl, wait=2 * lease_ttl + 5)
        self._launched = False
        self._executor_id = ""
        self._database = ""
        self._sweeper: asyncio.Task[None] | None = None

    def register(self, name: str, agent: Agent) -> None:
        """Serve turns of ``agent`` under ``name`` (the name clients submit to)."""
        if not isinstance(agent, Agent):
            raise ConfigurationError(f"register({name!r}, ...) needs an Agent, got {type(agent).__name__}")
        if agent._options.store is None:
            raise ConfigurationError(
                f"agent {name!r} has no store: durable turns keep the conversation in the store, "
                "so build it with Agent(..., store='postgresql://...') reachable by every worker"
            )
        if agent._options.lease is None:
            # An attempt of a turn owns its session until its last write: a resumed or recovered
            # attempt waits for a cancelled one to finish writing, or for a dead one's lease to expire.
            agent = agent._copy(lease=self.lease)
        _AGENTS[name] = agent

    async def launch(
        self,
        *,
        system_database_url: str,
        executor_id: str,
        application_version: str,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """Start DBOS in this process: recover this executor's own unfinished turns, then serve the queue.

        ``executor_id`` must be unique per worker and stable across its restarts;
        ``application_version`` must be pinned (change it only when the turn workflow changes).
        ``config`` adds other DBOS settings.
        """
        _check_identity(executor_id, application_version)
        _STEP["max_attempts"] = self.max_attempts
        settings: dict[str, Any] = {
            "name": self.app,
            "system_database_url": system_database_url,
            "executor_id": executor_id,
            "application_version": application_version,
            "log_level": "WARNING",
            **(config or {}),
        }
        dbos_config: DBOSConfig = settings  # type: ignore[assignment]
        try:
            with _system_database(system_database_url, "launching the worker"):
                DBOS(config=dbos_config)
                DBOS.launch()
        except BaseException:
            DBOS.destroy(workflow_completion_timeout_sec=0)
            raise
        self._executor_id, self._database = executor_id, system_database_url
        await DBOS.register_queue_async(
            self.queue,
            worker_concurrency=self.worker_concurrency,
            global_concurrency=self.global_concurrency,
            partition_concurrency=1,
            polling_interval_sec=self.polling_interval,
        )
        self._launched = True

    async def recover(self, executor_ids: Sequence[str]) -> list[str]:
        """Take over the unfinished turns of workers that will not come back; returns their turn ids.

        Call it for a worker that is known dead (or from a sweeper that watches heartbeats). A
        worker declared dead by mistake keeps running its current step; it stops at its next
        write to the session (the journal's version check) and its turn is finished here.
        """
        if not self._launched:
            raise ConfigurationError("recover() needs a launched worker: await launch(...) first")
        ids = [i for i in executor_ids if isinstance(i, str) and i]
        handles = DBOS._recover_pending_workflows(ids)  # the only recovery of another executor's work in DBOS
        return [h.get_workflow_id() for h in handles]

    def start_sweeper(self, *, interval: float = 5.0, dead_after: float = 60.0) -> None:
        """Recover the turns of workers that stopped beating, automatically.

        Every worker that runs the sweeper writes a heartbeat every ``interval`` seconds to a
        table in the DBOS system database; a worker silent for ``dead_after`` seconds is taken
        for dead and its unfinished turns are recovered by whichever sweeper sees it first
        (recovery is idempotent). Choose ``dead_after`` well above the longest pause a live
        worker can have: a worker recovered while alive is fenced, but its in-flight tool calls
        run twice. The sweeper outlives database errors (logged, retried within ``interval``), and
        judges nobody until it has reached the database for ``dead_after`` seconds in a row, so a
        beat late only because the database was down (or the sweeper just started) is no death.
        """
        if not self._launched:
            raise ConfigurationError("start_sweeper() needs a launched worker: await launch(...) first")
        if not 0 < interval < dead_after:
            raise ConfigurationError(f"start_sweeper needs 0 < interval < dead_after, got {interval}, {dead_after}")
        heartbeats = _Heartbeats(self._database, self._executor_id)
        self._sweeper = asyncio.create_task(self._sweep(heartbeats, interval, dead_after))

    async def _sweep(self, heartbeats: _Heartbeats, interval: float, dead_after: float) -> None:
        failures = 0
        try:
            while True:
                try:
                    dead = await asyncio.to_thread(heartbeats.beat_and_find_dead, dead_after)
                    if dead:
                        recovered = await self.recover(dead)
                        await asyncio.to_thread(heartbeats.forget, dead)
                        _log.warning("recovered %d turns of silent workers %s", len(recovered), dead)
                    failures = 0
                    delay = interval
                except Exception as exc:  # the database is down or restarting: keep beating once it is back
                    failures += 1
                    delay = min(interval, 0.25 * 2**failures)
                    _log.warning("sweeper of %s: %s; trying again in %.2f s", self._executor_id, exc, delay)
                await asyncio.sleep(delay)
        finally:
            heartbeats.close()

    def shutdown(self, *, wait: float = 0) -> None:
        """Stop serving turns (running ones are recovered by this executor id at its next launch)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        DBOS.destroy(workflow_completion_timeout_sec=int(wait))
        self._launched = False


class _Heartbeats:
    """``(executor_id, last_seen)`` rows in the DBOS system database, for the sweeper.

    A worker is only judged by a sweeper that has itself reached the database for ``dead_after``
    seconds without a failure: a beat that is late because the database was down (or because
    this sweeper just started) is never taken for a death.
    """

    def __init__(self, url: str, executor_id: str):
        import sqlalchemy

        if url.startswith(("postgresql://", "postgres://")):
            url = "postgresql+psycopg://" + url.split("://", 1)[1]
        self._sa = sqlalchemy
        # pre-ping: a connection the database dropped (a restart) is replaced before it is used
        self._engine = sqlalchemy.create_engine(url, pool_size=1, pool_pre_ping=True)
        self._me = executor_id
        self._table = False
        self._up_since: float | None = None

    def beat_and_find_dead(self, dead_after: float) -> list[str]:
        try:
            return self._beat_and_find_dead(dead_after)
        except Exception:
            self._up_since = None
            raise

    def _beat_and_find_dead(self, dead_after: float) -> list[str]:
        text, now = self._sa.text, time.time()
        with self._engine.begin() as conn:
            if not self._table:
                conn.execute(
                    text(
                        "CREATE TABLE IF NOT EXISTS tooloop_dbos_heartbeats "
                        "(executor_id TEXT PRIMARY KEY, last_seen DOUBLE PRECISION NOT NULL)"
                    )
                )
                self._table = True
            conn.execute(
                text(
                    "INSERT INTO tooloop_dbos_heartbeats (executor_id, last_seen) VALUES (:me, :now) "
                    "ON CONFLICT (executor_id) DO UPDATE SET last_seen = excluded.last_seen"
                ),
                {"me": self._me, "now": now},
            )
            if self._up_since is None:
                self._up_since = time.monotonic()
            if time.monotonic() - self._up_since < dead_after:
                return []  # live workers have not yet had dead_after seconds to beat since we see the database
            rows = conn.execute(
                text("SELECT executor_id FROM tooloop_dbos_heartbeats WHERE last_seen < :limit AND executor_id != :me"),
                {"limit": now - dead_after, "me": self._me},
            )
            return [str(row[0]) for row in rows]

    def forget(self, executor_ids: Sequence[str]) -> None:
        with self._engine.begin() as conn:
            for executor_id in executor_ids:
                conn.execute(
                    self._sa.text("DELETE FROM tooloop_dbos_heartbeats WHERE executor_id = :id"), {"id": executor_id}
                )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._engine.dispose()


@contextlib.contextmanager
def _system_database(url: str, what: str) -> Iterator[None]:
    """A DBOS system database that cannot be reached is a clear error naming it (password masked)."""
    import sqlalchemy.exc

    try:
        yield
    except sqlalchemy.exc.OperationalError as exc:
        reason = str(exc.orig if exc.orig is not None else exc).strip().splitlines()[0]
        where = masked_url(url)
        raise StoreUnavailableError(
            f"the DBOS system database at {where} is unreachable ({what}): {reason.replace(url, where)}"
        ) from None


@dataclass(frozen=True, slots=True)
class TurnHandle:
    """One submitted turn: its workflow id, session and turn id."""

    workflow_id: str
    session_id: str
    turn_id: str


class DurableClient:
    """The API-server side: submit turns, read their events, await, cancel, resume. No agent code needed."""

    def __init__(self, system_database_url: str, *, app: str = "tooloop", queue: str = "tooloop-turns"):
        self.queue = queue
        self._url = system_database_url
        with _system_database(system_database_url, "connecting the client"):
            self._client = DBOSClient(system_database_url=system_database_url, application_name=app)

    async def submit(
        self,
        agent: str,
        session_id: str,
        prompt: str | None,
        *,
        turn_id: str,
        approvals: Sequence[ApprovalDecision] = (),
    ) -> TurnHandle:
        """Queue one turn; submitting the same ``(session_id, turn_id)`` again returns the same turn.

        ``prompt=None`` with ``approvals`` continues a turn that stopped for approval: the decision
        is a turn of its own (give it its own ``turn_id``), so no worker waits for a person.
        """
        for name, value in (("agent", agent), ("session_id", session_id), ("turn_id", turn_id)):
            if not isinstance(value, str) or not value:
                raise ConfigurationError(f"submit({name}=...) must be a non-empty str, got {value!r}")
        workflow_id = turn_workflow_id(session_id, turn_id)
        options: EnqueueOptions = {
            "workflow_name": TURN_WORKFLOW,
            "queue_name": self.queue,
            "workflow_id": workflow_id,
            "queue_partition_key": session_id,
        }
        decisions = [d.to_dict() for d in approvals]
        with _system_database(self._url, f"submitting turn {workflow_id!r}"):
            await self._client.enqueue_async(options, agent, session_id, prompt, turn_id, decisions)
        return TurnHandle(workflow_id, session_id, turn_id)

    async def result(self, turn: TurnHandle, *, polling_interval: float = 0.2) -> TurnOutcome:
        """Wait for the turn to end and return how it ended (the conversation is in the store).

        A turn that failed raises the error that ended it (a
        :class:`~tooloop.ProviderError` after the step's retries, say), as its worker raised it.
        """
        try:
            with _system_database(self._url, f"awaiting turn {turn.workflow_id!r}"):
                handle: Any = await self._client.retrieve_workflow_async(turn.workflow_id)
                return TurnOutcome.from_dict(await handle.get_result(polling_interval_sec=polling_interval))
        except DBOSMaxStepRetriesExceeded as exc:
            raise _ended_by(exc) from exc

    async def events(self, turn: TurnHandle, *, polling_interval: float = 0.1) -> AsyncIterator[dict[str, Any]]:
        """The turn's events as JSON dicts, from the start, until the turn ends.

        A retried turn (its worker died) starts a new ``{"kind": "attempt"}`` marker: text of an
        earlier attempt was never part of the answer. The last event always says how the turn
        ended: ``turn_finished`` (with the outcome), ``turn_failed`` (with ``error``: its type
        and message) or ``turn_cancelled``.
        """
        stream = self._client.read_stream_async(turn.workflow_id, EVENTS_STREAM, polling_interval_sec=polling_interval)
        last = ""
        with _system_database(self._url, f"reading the events of turn {turn.workflow_id!r}"):
            async for value in stream:
                last = str(value.get("kind", "")) if isinstance(value, dict) else ""
                yield value
        if last not in _FINAL_EVENTS:  # cancelled, or ended where it could not write its last event
            final = await self._final_event(turn)
            if final is not None:
                yield final

    async def _final_event(self, turn: TurnHandle) -> dict[str, Any] | None:
        status = await self.status(turn)
        if status == "CANCELLED":
            return {"kind": "turn_cancelled"}
        if status not in ("SUCCESS", "ERROR"):
            return None
        try:
            return {"kind": "turn_finished", **(await self.result(turn)).to_dict()}
        except Exception as exc:
            return {"kind": "turn_failed", "error": _error_to_dict(exc)}

    async def status(self, turn: TurnHandle) -> str:
        """The DBOS status of the turn (``ENQUEUED``, ``PENDING``, ``SUCCESS``, ``ERROR``, ``CANCELLED``)."""
        with _system_database(self._url, f"reading the status of turn {turn.workflow_id!r}"):
            handle: Any = await self._client.retrieve_workflow_async(turn.workflow_id)
            status = await handle.get_status()
        return str(status.status)

    async def cancel(self, turn: TurnHandle) -> None:
        """Stop the turn; the session keeps a valid transcript (a cut call is recorded as cancelled)."""
        with _system_database(self._url, f"cancelling turn {turn.workflow_id!r}"):
            await self._client.cancel_workflow_async(turn.workflow_id)

    async def resume(self, turn: TurnHandle) -> None:
        """Run a cancelled (or failed) turn again from where its session stands."""
        with _system_database(self._url, f"resuming turn {turn.workflow_id!r}"):
            await self._client.resume_workflow_async(turn.workflow_id, queue_name=self.queue)

    def close(self) -> None:
        """Release the client's database connections."""
        self._client.destroy()
