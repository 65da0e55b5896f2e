"""A stored session keeps the system prompt and settings it ran with; a run by another agent says so."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tooloop import Agent, ModelSettings, SystemMessage
from tooloop.store import open_store
from tooloop.testing import ScriptedModel


async def test_the_session_keeps_the_agents_setup_and_another_agent_is_noticed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    writer = Agent(
        ScriptedModel(["a poem", "another poem"]),
        name="writer",
        system="You write poems.",
        settings=ModelSettings(temperature=0.3),
        store=url,
    )
    caplog.set_level(logging.WARNING, logger="tooloop.store")
    await writer.run("a poem please", session_id="s1")
    await writer.run("again", session_id="s1")
    assert not caplog.records  # the same agent continuing says nothing

    store = open_store(url)
    try:
        kept = (await store.get_session("s1")).metadata["tooloop.agent"]
        assert kept == {
            "name": "writer",
            "model": "scripted",
            "system": "You write poems.",
            "settings": {"temperature": 0.3},
        }

        coder_model = ScriptedModel(["some code"])
        coder = Agent(coder_model, name="coder", system="You write Python.", store=url)
        await coder.run("now code", session_id="s1")
        (warning,) = caplog.records
        assert (
            "session s1 was run with another system prompt (agent 'writer' before, 'coder' now)" in warning.getMessage()
        )
        sent = coder_model.requests[0].messages
        assert isinstance(sent[0], SystemMessage) and sent[0].text == "You write Python."  # its own, said out loud
        assert (await store.get_session("s1")).metadata["tooloop.agent"]["name"] == "coder"
    finally:
        await store.close()
