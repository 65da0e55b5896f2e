"""The transport's framing of a chunked body (llhttp, through httptools), fed the bytes of a response cut anywhere.

The transport reads whatever has arrived and hands over every body byte it completes, so a stream
of many small events that arrives at once costs one read; these check the framing against
responses cut at every possible place. The end-to-end behaviour (keep-alive, extensions and
trailers on a real socket, a body cut short) is in tests/models/test_lean_transport.py,
test_parity.py and the adapters' wire tests.
"""

from __future__ import annotations

import httptools
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tooloop.transport.http import TransportError, _Answer, _Feeder

HEAD = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"


def encode(pieces: list[bytes], *, extension: bytes = b"", trailers: bytes = b"") -> bytes:
    body = b"".join(b"%x%s\r\n%s\r\n" % (len(p), extension, p) for p in pieces if p)
    return body + b"0" + extension + b"\r\n" + trailers + b"\r\n"


FEEDER = _Feeder()
SINK = FEEDER.sink  # what a pool's parsers report to


def parser() -> tuple[_Answer, httptools.HttpResponseParser]:
    return _Answer(), httptools.HttpResponseParser(SINK)


def _feed(llhttp: httptools.HttpResponseParser, parse: _Answer, data: bytes) -> None:
    FEEDER.feed(llhttp, parse, data)


def decode(raw: bytes, cuts: list[int]) -> tuple[bytes, _Answer]:
    parse, llhttp = parser()
    raw = HEAD + raw
    start = 0
    for cut in [*sorted({c + len(HEAD) for c in cuts}), len(raw)]:
        if start < cut and not parse.complete:
            _feed(llhttp, parse, raw[start:cut])
            start = cut
    return b"".join(parse.body), parse


@given(
    st.lists(st.binary(max_size=40), max_size=8),
    st.lists(st.integers(min_value=0, max_value=400), max_size=12),
    st.sampled_from([b"", b";ext=1"]),
    st.sampled_from([b"", b"x-trailer: yes\r\n", b"a: 1\r\nb: 2\r\n"]),
)
def test_any_cut_decodes_the_same_body(pieces: list[bytes], cuts: list[int], extension: bytes, trailers: bytes) -> None:
    raw = encode(pieces, extension=extension, trailers=trailers)
    body, parse = decode(raw, [c for c in cuts if c < len(raw)])
    assert body == b"".join(pieces)
    assert parse.complete and parse.keep


def test_one_byte_at_a_time() -> None:
    raw = encode([b"data: one\n\n", b"data: two\n\n"], trailers=b"t: 1\r\n")
    body, parse = decode(raw, list(range(len(raw))))
    assert body == b"data: one\n\ndata: two\n\n" and parse.complete


def test_not_done_until_the_last_chunk_and_its_blank_line() -> None:
    parse, llhttp = parser()
    _feed(llhttp, parse, HEAD + b"3\r\nabc\r\n0\r\n")
    assert parse.body == [b"abc"] and not parse.complete
    _feed(llhttp, parse, b"\r\n")
    assert parse.complete


def test_a_chunk_larger_than_a_read_arrives_in_several() -> None:
    big = bytes(range(256)) * 1024  # 256 KB in one chunk, read 64 KB at a time
    raw = encode([big])
    body, parse = decode(raw, list(range(0, len(raw), 65536)))
    assert body == big and parse.complete


def test_bytes_after_the_body_mark_the_connection_unusable() -> None:
    body, parse = decode(encode([b"x"]) + b"HTTP/1.1 200 OK\r\n", [])
    assert body == b"x" and parse.complete and not parse.keep


@pytest.mark.parametrize("raw", [b"zz\r\n", b"1" * 70_000])
def test_a_bad_or_endless_chunk_line_is_a_transport_error(raw: bytes) -> None:
    with pytest.raises(TransportError):
        decode(raw, [])
