"""Agents and reward functions the rollout batch tests run, importable by worker processes and Ray actors."""

from __future__ import annotations

import os

from tooloop import Agent
from tooloop.batch import BatchItem
from tooloop.loop.result import RunResult
from tooloop.models import ModelSettings, get_model


def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


def capturing_agent(url: str | None = None) -> Agent:
    """The OpenAI-compatible adapter capturing tokens from the token server at ``url`` (else ``TOKEN_SERVER_URL``)."""
    model = get_model(
        "vllm:toy",
        base_url=url or os.environ["TOKEN_SERVER_URL"],
        capture_tokens=True,
        settings=ModelSettings(temperature=0.7, seed=11),
    )
    return Agent(model, tools=[lookup], settings=ModelSettings(max_tokens=64))


def exact_answer(item: BatchItem, result: RunResult) -> dict[str, float]:
    """1.0 when the answer is the upper-cased prompt, with a format score."""
    right = result.text == f"answer: {item.prompt.upper()}"
    return {"reward": 1.0 if right else 0.0, "format": 1.0 if result.text.startswith("answer:") else 0.0}
