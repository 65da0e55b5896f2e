"""The ``tooloop`` logger tree, silent by default.

Loggers: ``tooloop.loop`` (runs, tool calls), ``tooloop.models.<provider>`` (model requests),
``tooloop.store`` (writes, at debug). The root ``tooloop`` logger has a ``NullHandler``, so
nothing is printed unless the application configures logging or ``TOOLOOP_LOG=debug|info`` is
set, which installs a readable stderr handler at import. Keys and headers are never logged;
message contents only at debug and only with ``TOOLOOP_LOG_CONTENT=1`` or
:func:`set_log_content`.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TextIO

__all__ = ["ROOT", "content_logged", "install_handler", "model_logger", "set_log_content"]

ROOT = logging.getLogger("tooloop")
ROOT.addHandler(logging.NullHandler())

_FORMAT = "%(asctime)s %(levelname)-5s %(name)s: %(message)s"
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_content = os.environ.get("TOOLOOP_LOG_CONTENT", "").strip().lower() in ("1", "true", "yes", "on")
_handler: logging.Handler | None = None
_model_loggers: dict[str, logging.Logger] = {}


def content_logged() -> bool:
    """True when message contents may be logged (at debug level)."""
    return _content


def set_log_content(enabled: bool) -> None:
    """Allow (or forbid) message contents in debug logs; the default comes from ``TOOLOOP_LOG_CONTENT``."""
    global _content
    _content = bool(enabled)


def model_logger(provider: str) -> logging.Logger:
    """``tooloop.models.<provider>``."""
    logger = _model_loggers.get(provider)
    if logger is None:
        logger = _model_loggers[provider] = logging.getLogger(f"tooloop.models.{provider}")
    return logger


def install_handler(level: str | int | None, stream: TextIO | None = None) -> logging.Handler | None:
    """Print ``tooloop`` logs at ``level`` or above to ``stream`` (stderr), replacing an earlier one.

    ``level=None`` removes the handler and gives the ``tooloop`` logger its default level back.
    """
    global _handler
    if level is None:
        if _handler is not None:
            ROOT.removeHandler(_handler)
            _handler = None
        ROOT.setLevel(logging.NOTSET)
        return None
    if isinstance(level, str):
        if level.strip().lower() not in _LEVELS:
            raise ValueError(f"unknown log level {level!r}: use one of {', '.join(_LEVELS)}")
        level = _LEVELS[level.strip().lower()]
    if _handler is not None:
        ROOT.removeHandler(_handler)
    _handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    _handler.setFormatter(logging.Formatter(_FORMAT))
    ROOT.addHandler(_handler)
    ROOT.setLevel(level)
    return _handler


def _from_environment() -> None:
    level = os.environ.get("TOOLOOP_LOG", "").strip().lower()
    if not level:
        return
    if level not in _LEVELS:
        print(f"tooloop: TOOLOOP_LOG={level!r} is not one of {', '.join(_LEVELS)}; logging stays off", file=sys.stderr)
        return
    install_handler(level)


_from_environment()
