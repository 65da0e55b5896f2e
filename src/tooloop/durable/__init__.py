"""Conversations that outlive a worker: idempotent turns, their outcome and events as JSON.

The engine-free part: :func:`turn_workflow_id`, :class:`TurnOutcome` and :func:`event_to_dict`
serve any engine or plain workers (with ``agent.run(prompt, session_id=..., turn_id=...)``, a
turn submitted twice is one turn). :mod:`tooloop.durable.dbos` runs turns on DBOS Transact.
"""

from ._wire import TurnOutcome, event_to_dict, turn_workflow_id, usage_from_dict, usage_to_dict

__all__ = ["TurnOutcome", "event_to_dict", "turn_workflow_id", "usage_from_dict", "usage_to_dict"]
