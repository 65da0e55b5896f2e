"""What a batch record carries for training: the trajectory, the reward, and the provenance."""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .._version import __version__
from ..agent import Agent
from ..loop.result import RunResult
from ..models.base import ModelSettings
from ..rollouts import Reward
from ..rollouts._trajectory import record_form
from ._items import BatchItem

__all__ = ["RewardFunction", "extras_for", "provenance_of"]

RewardFunction = Callable[[BatchItem, RunResult], "Reward | Awaitable[Reward]"]
"""``reward(item, result)``: a number, or a mapping of named scores (``"reward"`` among them); may be async."""


def provenance_of(agent: Agent) -> dict[str, Any]:
    """What a trainer needs to reproduce the batch's rollouts: the model, its sampling settings
    (the model's defaults with the agent's on top), a hash of the tool set, tooloop's version and the seed."""
    model = agent.model
    defaults = getattr(model, "settings", None)
    settings = defaults.merged(agent.settings) if isinstance(defaults, ModelSettings) else agent.settings
    sampling = _settings_dict(settings)
    return {
        "model": model.name,
        "provider": getattr(model, "provider", None),
        "settings": sampling,
        "seed": settings.seed,
        "tools": sorted(tool.name for tool in agent.tools),
        "tools_hash": tools_hash(agent),
        "tooloop_version": __version__,
    }


def _settings_dict(settings: ModelSettings) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name in ("temperature", "max_tokens", "top_p", "stop", "seed", "parallel_tool_calls"):
        value = getattr(settings, name)
        if value is not None:
            data[name] = list(value) if isinstance(value, tuple) else value
    if settings.extra:
        data["extra"] = json.loads(json.dumps(dict(settings.extra), default=str))
    return data


def tools_hash(agent: Agent) -> str:
    """A SHA-256 of the agent's tool definitions (name, description, parameters, strict), in name order."""
    definitions = sorted(
        (
            [t.definition.name, t.definition.description, t.definition.parameters, t.definition.strict]
            for t in agent.tools
        ),
        key=lambda d: str(d[0]),
    )
    text = json.dumps(definitions, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


async def extras_for(
    item: BatchItem, result: RunResult, reward: RewardFunction | None, provenance: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The training fields of one record: ``trajectory`` (when tokens were captured), ``reward``
    (or ``reward_error`` when the function failed) and ``provenance``."""
    extras: dict[str, Any] = {}
    trajectory = record_form(result.transcript)
    if trajectory is not None:
        extras["trajectory"] = trajectory
    if reward is not None:
        extras.update(await _score(reward, item, result))
    if provenance is not None:
        extras["provenance"] = provenance
    return extras


async def _score(reward: RewardFunction, item: BatchItem, result: RunResult) -> dict[str, Any]:
    try:
        value = reward(item, result)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:  # the user's scoring failed: this record says so, the batch goes on
        return {"reward": None, "reward_error": {"type": type(exc).__name__, "message": str(exc)}}
    if isinstance(value, Mapping):
        return {"reward": json.loads(json.dumps(dict(value), default=str))}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"reward": value}
    message = f"the reward function returned {type(value).__name__}, not a number or a mapping"
    return {"reward": None, "reward_error": {"type": "TypeError", "message": message}}
