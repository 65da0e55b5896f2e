"""The process groups tooloop starts (stdio MCP servers), and stopping them however we end.

Each server runs in a process group of its own, so a signal to our process does not reach it:
the group must be stopped by us. A normal end stops each server (the MCP way: stdin closed,
SIGTERM, SIGKILL); the groups still running when the interpreter exits, or when a command must
exit at once, are killed here. Front ends (``tooloop run``, ``tooloop acp``) also treat SIGTERM,
which editors and process managers send to stop an agent, as Ctrl-C, so that ending runs the
same cleanup. Standard library only: ``import tooloop`` stays light.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from types import FrameType

__all__ = ["forget", "kill_all", "running_groups", "sigterm_as_interrupt", "terminating", "track"]

_LIVE_GROUPS: set[int] = set()
_TERMINATING = threading.Event()


def track(leader: int) -> None:
    """Remember the process group led by ``leader`` until :func:`forget`."""
    _LIVE_GROUPS.add(leader)


def forget(leader: int) -> None:
    """The group of ``leader`` was stopped."""
    _LIVE_GROUPS.discard(leader)


def running_groups() -> frozenset[int]:
    """Process groups started and not yet stopped (their leaders' pids)."""
    return frozenset(_LIVE_GROUPS)


def kill_all() -> None:
    """SIGKILL every group still running (for an exit that cannot wait for a graceful stop)."""
    for leader in tuple(_LIVE_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(leader, signal.SIGKILL)
        _LIVE_GROUPS.discard(leader)


atexit.register(kill_all)


def sigterm_as_interrupt() -> None:
    """From now on, SIGTERM does what Ctrl-C does: a run in progress is cancelled (or the main
    task, or ``KeyboardInterrupt`` is raised), the program ends through its normal cleanup and
    its servers are stopped. Only possible in the main thread; elsewhere this does nothing."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _as_interrupt)


def terminating() -> bool:
    """True once SIGTERM was received: a front end that would go on after Ctrl-C (a chat back at
    its prompt) ends instead."""
    return _TERMINATING.is_set()


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    _TERMINATING.set()
    handler = signal.getsignal(signal.SIGINT)
    if handler in (signal.SIG_IGN, signal.SIG_DFL, None):  # Ctrl-C is ignored here: stop anyway
        raise KeyboardInterrupt
    signal.raise_signal(signal.SIGINT)
