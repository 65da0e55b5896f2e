"""Captured tokens (exact ids and logprobs) persist through both stores, byte for byte."""

from __future__ import annotations

from tests.rollouts.conftest import agent_for, f32, lookup_policy, responses
from tooloop.rollouts import Trajectory
from tooloop.store import BaseStore
from tooloop.testing.token_server import serve
from tooloop.transport.perloop import close_loop_clients


async def test_a_stored_session_keeps_every_responses_tokens(store: BaseStore) -> None:
    with serve(lookup_policy) as server:
        agent = agent_for(server).with_session("rollout-1", store)
        result = await agent.run("héllo")
        await close_loop_clients()
    loaded = await store.load("rollout-1")
    assert loaded == result.transcript
    stored = responses(loaded)
    assert len(stored) == 2
    for message, (prompt, completion, logprobs) in zip(stored, server.sampled, strict=True):
        assert message.tokens is not None and message.tokens.ok
        assert message.tokens.prompt_ids.tolist() == prompt
        assert message.tokens.completion_ids.tolist() == completion
        assert message.tokens.completion_logprobs == f32(logprobs)  # kept as 32-bit floats


async def test_a_stored_sessions_trajectory_is_the_runs(store: BaseStore) -> None:
    with serve(lookup_policy) as server:
        result = await agent_for(server, stream=True).with_session("rollout-2", store).run("hi")
        await close_loop_clients()
    stored = await Trajectory.from_session(store, "rollout-2", strict=True)
    assert stored.to_dict() == Trajectory.from_result(result, strict=True).to_dict()
