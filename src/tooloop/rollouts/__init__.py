"""Token-exact rollouts: conversations as training data for reinforcement learning.

With ``capture_tokens=True`` on an OpenAI-compatible model (vLLM, SGLang), every model response
in a transcript keeps the exact prompt ids, sampled ids and their logprobs the server reported
(:class:`~tooloop.messages.Tokens`). :class:`Trajectory` turns a conversation into branches of
``token_ids``, ``logprobs`` and ``loss_mask`` for a trainer, without re-tokenising anything.
See docs/rollouts.md.
"""

from __future__ import annotations

from ..messages import Tokens
from ._trajectory import Branch, Reward, Trajectory, TrajectoryError, response_messages

__all__ = ["Branch", "Reward", "Tokens", "Trajectory", "TrajectoryError", "response_messages"]
