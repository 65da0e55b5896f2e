"""The transport's JSON reader reads what the standard library reads, the same way, and fails where it fails."""

from __future__ import annotations

import json
import math

import pytest

from tooloop.transport.client import loads


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": [1, 2.5, "x\\u00e9", null, true, {"b": "c"}], "d": -12}',
        b'"\\ud83d\\ude00"',  # a surrogate pair
        b'"\\ud83d"',  # half a pair (a server that split an escaped character across events)
        b'"\\udc00\\ud800"',
        b'"\xed\xa0\x80"',  # a surrogate encoded as UTF-8
        b"123456789012345678901234567890",
        b"-9223372036854775809",
        b"18446744073709551615",
        b"[1e400, -1e400, 5e-324, 2.2250738585072011e-308, 1.0000000000000002]",
        b"NaN",
        b"[Infinity, -Infinity]",
        b"\xef\xbb\xbf{}",  # a byte order mark
        b'{"a": 1, "a": 2}',
        b"  [0.1e1, -0.0, 1E5]  ",
        b'{"n": 1' + b"2" * 3000 + b"}",
    ],
)
def test_what_the_standard_library_reads_is_read_the_same(data: bytes) -> None:
    expected = json.loads(data)
    read = loads(data)
    assert repr(read) == repr(expected)  # repr: NaN, -0.0 and the int/float distinction compared too
    if isinstance(expected, list) and expected and isinstance(expected[0], float) and math.isinf(expected[0]):
        assert read[0] == math.inf


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b"[1,]", b'{"a":1,}', b"01", b"+1", b'"\xff"', b'"a\nb"', b"tru", b"{}x", b"1" * 5000],
)
def test_what_the_standard_library_refuses_is_refused_with_its_error(data: bytes) -> None:
    with pytest.raises(ValueError) as expected:
        json.loads(data)
    with pytest.raises(ValueError) as raised:
        loads(data)
    assert type(raised.value) is type(expected.value)
    assert str(raised.value) == str(expected.value)


def test_nesting_orjson_reads_is_still_read() -> None:
    depth = 1010  # past the interpreter's recursion limit, within orjson's 1024 levels
    assert loads(b"[" * depth + b"]" * depth) is not None
