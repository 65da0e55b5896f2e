"""The one server-sent-events decoder: events split from body pieces as they arrive.

Every provider's stream goes through :class:`SSEDecoder` (the fast paths for the usual one-line
``data:`` events, the spec's general rule for anything else) or :func:`sse_events`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

__all__ = ["SSEDecoder", "data_array", "sse_events"]

_CR, _LF = 0x0D, 0x0A  # "byte in bytes" with an int is a memchr; with bytes it first fails as an int
_NAMED = re.compile(rb"event: ([^\n]*)\ndata: ([^\n]*)\n\n")
_NAMED_DATA = re.compile(rb"event: [^\n]*\ndata: ([^\n]*)\n\n")


class SSEDecoder:
    """Server-sent events split from body pieces as they arrive: ``(event name or None, data)``.

    Synchronous, so a reader takes every event of a piece in one go (a short answer usually
    arrives in one piece). Lines end with LF, CRLF or a lone CR, as the spec allows (a CRLF split
    between two pieces counts once). Data not closed by a blank line when the body ends is an
    incomplete event and is dropped, as the spec says.
    """

    __slots__ = ("_buffer", "_cr")

    def __init__(self) -> None:
        self._buffer = b""  # the start of an event whose blank line has not arrived (line ends as LF)
        self._cr = False  # the last piece ended with a CR: an LF starting the next one belongs to it

    def feed(self, piece: bytes) -> list[tuple[str | None, bytes]]:
        """The events completed by ``piece``."""
        if self._cr or _CR in piece:
            piece = self._normalized(piece)
        return self._events(piece)

    def _normalized(self, piece: bytes) -> bytes:
        """``piece`` with every line end (CRLF, lone CR) as LF."""
        if self._cr:
            self._cr = False
            if piece[:1] == b"\n":
                piece = piece[1:]
        if _CR in piece:
            self._cr = piece[-1] == _CR
            piece = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return piece

    def _events(self, piece: bytes) -> list[tuple[str | None, bytes]]:
        buffer = self._buffer + piece if self._buffer else piece
        blocks = buffer.split(b"\n\n")
        self._buffer = blocks.pop()
        out: list[tuple[str | None, bytes]] = []
        for block in blocks:
            if block.startswith(b"data: ") and _LF not in block:  # the usual event: one data line
                out.append((None, block[6:]))
            elif block.startswith(b"event: "):
                _named(block, out)
            elif block:
                _event(block, out)
        return out

    def joined(self, piece: bytes, separator: bytes) -> tuple[bytes, int] | None:
        """The usual piece, complete one-line ``data:`` events and nothing else, as their data joined
        by ``separator`` and their number; None for any other piece, which is left for :meth:`data`
        (or :meth:`feed`) to read."""
        if self._buffer or self._cr or not piece.startswith(b"data: ") or not piece.endswith(b"\n\n") or _CR in piece:
            return None
        datas = piece[6:-2].split(b"\n\ndata: ")
        joined = separator.join(datas)
        if _LF in joined:  # a line that is not a data line, or data on several lines
            return None
        return joined, len(datas)

    def array(self, piece: bytes, last: bytes) -> tuple[bytes, int, bool] | None:
        """:func:`data_array` for this decoder's next piece (None while it holds part of an event)."""
        if self._buffer or self._cr:
            return None
        return data_array(piece, last)

    def named(self, piece: bytes) -> list[tuple[bytes, bytes]] | None:
        """The usual piece of a stream of named events, complete ``event:`` + one-line ``data:``
        events and nothing else, as ``(name, data)`` bytes; None for any other piece, which is left
        for :meth:`feed` (or :meth:`data`) to read."""
        if not self._usual_named(piece):
            return None
        found: list[tuple[bytes, bytes]] = _NAMED.findall(piece)
        return found if self._all_found(piece, len(found)) else None

    def named_data(self, piece: bytes) -> list[bytes] | None:
        """:meth:`named` without the names: the data of each event."""
        if not self._usual_named(piece):
            return None
        found: list[bytes] = _NAMED_DATA.findall(piece)
        return found if self._all_found(piece, len(found)) else None

    def _usual_named(self, piece: bytes) -> bool:
        return (
            not self._buffer
            and not self._cr
            and piece.startswith(b"event: ")
            and piece.endswith(b"\n\n")
            and _CR not in piece
        )

    @staticmethod
    def _all_found(piece: bytes, found: int) -> bool:
        # Each match is one whole two-line event (three line ends, blank line included); with every
        # event starting "event: " and as many matches as events, the matches are the piece.
        return piece.count(b"\n") == 3 * found and piece.count(b"\n\nevent: ") == found - 1

    def data(self, piece: bytes) -> list[bytes]:
        """The data of the events completed by ``piece``, for readers that ignore event names."""
        if self._cr or _CR in piece:
            piece = self._normalized(piece)
        buffer = self._buffer + piece if self._buffer else piece
        if buffer.startswith(b"data: ") and buffer.endswith(b"\n\n"):
            datas = buffer[6:-2].split(b"\n\ndata: ")
            if buffer.count(b"\n") == 2 * len(datas):  # only one-line data events, all complete: the usual piece
                self._buffer = b""
                return datas
        return [data for _, data in self._events(piece)]  # the general rule (the buffer is untouched so far)


def _named(block: bytes, out: list[tuple[str | None, bytes]]) -> None:
    """A named event: usually one ``event:`` line and one ``data:`` line (else the general rule)."""
    end = block.find(_LF)
    if end > 0 and block.startswith(b"data: ", end + 1) and block.find(_LF, end + 1) < 0:
        out.append((block[7:end].decode(), block[end + 7 :]))
    else:
        _event(block, out)


def _event(block: bytes, out: list[tuple[str | None, bytes]]) -> None:
    """The event of ``block`` (its lines, without the blank line that ended it), if it has data."""
    name: str | None = None
    data: list[bytes] = []
    for line in block.split(b"\n"):
        field, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"event":
            name = value.decode()
    if data:
        out.append((name, b"\n".join(data)))


def data_array(piece: bytes, last: bytes) -> tuple[bytes, int, bool] | None:
    """The usual piece of a stream of JSON events, complete one-line ``data:`` events and nothing
    else, as one JSON array of their data, their number and whether the last event's data was
    ``last`` (a closing line such as ``[DONE]``: it is left out); None for any other piece, which
    is left for :meth:`SSEDecoder.data` (or :meth:`SSEDecoder.feed`) to read.

    For the first piece of a body, or any piece after one this took: a reader that takes its usual
    pieces this way makes an :class:`SSEDecoder` only for a piece that is not one.
    """
    if not piece.startswith(b"data: ") or not piece.endswith(b"\n\n") or _CR in piece:
        return None
    datas = piece[6:-2].split(b"\n\ndata: ")
    ended = datas[-1] == last
    if ended:
        datas.pop()
        if not datas:
            return b"[]", 0, True
    datas[0] = b"[" + datas[0]  # the brackets on the first and last data, not on a copy of the whole
    datas[-1] += b"]"
    array = b",".join(datas)
    if _LF in array:  # a line that is not a data line, or data on several lines
        return None
    return array, len(datas), ended


async def sse_events(pieces: AsyncIterator[bytes]) -> AsyncIterator[tuple[str | None, bytes]]:
    """Server-sent events from body pieces: ``(event name or None, data)`` per event."""
    decoder = SSEDecoder()
    async for piece in pieces:
        for event in decoder.feed(piece):
            yield event
