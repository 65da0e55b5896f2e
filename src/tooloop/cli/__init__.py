"""The ``tooloop`` command line (extra ``tooloop[cli]``): ``run``, ``chat``, ``sessions``, ``models``, ``tools``.

Nothing in the library imports this package; ``import tooloop`` never loads typer or rich.
"""

from __future__ import annotations

from .app import LAZY_COMMANDS, app, main
from .exits import ExitCode

__all__ = ["LAZY_COMMANDS", "ExitCode", "app", "main"]
