"""The JSONL results file of a batch: one finished conversation per line, appended as it ends.

The file is the batch's only checkpoint. A line is written with one ``write`` on a file opened in
append mode, so writers in several processes of one host never interleave and a killed writer
leaves at most one partial last line, which :func:`prepare` cuts off before the next run.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

from ..errors import ConfigurationError, CorruptDataError
from ..loop.result import RunResult
from ..messages import Usage
from ..transcript import SCHEMA_VERSION

__all__ = ["ResultsFile", "encode_record", "exclusive", "prepare", "record_for"]

_encoder = msgspec.json.Encoder()


def encode_record(record: dict[str, Any]) -> bytes:
    """One record as a line of compact JSON (UTF-8, no trailing newline).

    msgspec's encoder, several times faster than ``json.dumps`` on a captured conversation's
    tokens, which it is given as bytes and writes as base64 strings itself; it writes the same
    JSON, except that a NaN or an infinity becomes ``null`` (standard JSON has neither). What it
    cannot encode (a string with a lone surrogate) goes through ``json.dumps``, which says what is
    wrong.
    """
    try:
        return _encoder.encode(record)
    except (TypeError, ValueError, OverflowError):
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_base64).encode()


def _base64(value: object) -> str:
    """What ``json.dumps`` writes for the bytes msgspec writes as base64 (token arrays)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def usage_to_dict(usage: Usage) -> dict[str, Any]:
    """Every field of ``usage`` as JSON types (a ``Decimal`` cost becomes its string)."""
    data: dict[str, Any] = {}
    for f in dataclasses.fields(usage):
        value = getattr(usage, f.name)
        data[f.name] = str(value) if isinstance(value, Decimal) else value
    return data


def record_for(
    item_id: str, result: RunResult, elapsed: float, metadata: Any = None, extras: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON record of one finished conversation; ``extras`` (trajectory, reward, provenance) go last."""
    error = result.error
    record = {
        "id": item_id,
        "stop_reason": result.stop_reason.value,
        "text": result.text,
        "usage": usage_to_dict(result.usage),
        "error": None if error is None else {"type": type(error).__name__, "message": _safe_str(error)},
        "elapsed_s": round(elapsed, 6),
        "metadata": metadata,
        # Transcript.to_json()'s form, without encoding and decoding it once more before the line is
        # written, each response's prompt ids after the previous response's (prompt_after), and the
        # token arrays as bytes that encode_record writes as base64.
        "transcript": {
            "version": SCHEMA_VERSION,
            "messages": result.transcript.to_dicts(prompt_extensions=True, binary=True),
        },
    }
    if extras:
        record.update(extras)
    return record


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # an exception whose __str__ raises still gets recorded
        return f"<{type(error).__name__}: message unavailable>"


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the results file for one batch at a time (a lock on ``NAME.lock`` beside it, released
    when the batch ends or its process dies); a second batch on the same file is refused at once,
    before it runs anything, instead of doing all the work twice."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(f"{path.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _try_lock(fd):
            raise ConfigurationError(
                f"the results file {path} is in use by another batch (it holds {lock.name}); wait for that "
                "batch to end, or give this one another results file"
            )
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as f:
        yield from enumerate(f, 1)


def prepare(path: Path, *, drop_errors: bool = False) -> dict[str, bool]:
    """Make ``path`` ready to append to and return the ids it holds (id -> finished without error).

    A partial last line (a writer killed mid-write) is cut off. A complete line that is not a
    record is a :class:`CorruptDataError` naming the file and line: it is never silently dropped.
    With ``drop_errors`` the records of failed conversations are removed, so they run again.
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        return {}
    _cut_partial_tail(path)
    done: dict[str, bool] = {}
    failed_lines = False
    for number, line in _lines(path):
        item_id, ok = _parse_line(path, number, line)
        if item_id in done:
            raise CorruptDataError(f"{path}:{number}: id {item_id!r} appears twice in the results file")
        done[item_id] = ok
        failed_lines = failed_lines or not ok
    if drop_errors and failed_lines:
        _rewrite_without_errors(path)
        done = {k: v for k, v in done.items() if v}
    return done


def _cut_partial_tail(path: Path) -> None:
    size = path.stat().st_size
    if size == 0:
        return
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        data = path.read_bytes()
        f.truncate(data.rfind(b"\n") + 1)


def _parse_line(path: Path, number: int, line: bytes) -> tuple[str, bool]:
    try:
        record = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptDataError(f"{path}:{number}: not a JSON record ({exc})") from exc
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        raise CorruptDataError(f"{path}:{number}: a record must be an object with a string 'id'")
    return record["id"], record.get("error") is None


def _rewrite_without_errors(path: Path) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("wb") as out:
        for number, line in _lines(path):
            if _parse_line(path, number, line)[1]:
                out.write(line)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


class ResultsFile:
    """An append-only JSONL file shared by the writers of one host."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path):
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line with a single ``write`` (atomic against other appenders)."""
        self._write(encode_record(record) + b"\n")

    def append_line(self, line: str) -> None:
        """Write an already encoded record."""
        self._write((line + "\n").encode())

    def _write(self, data: bytes) -> None:
        written = os.write(self._fd, data)
        while written < len(data):  # only on a full disk or a signal; finish the line
            written += os.write(self._fd, data[written:])

    def close(self) -> None:
        """Flush to disk and close."""
        if self._fd >= 0:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1
