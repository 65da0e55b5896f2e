"""``-a/--attach`` and ``-f/--fragment``: files, URLs and standard input as parts of the prompt.

An attachment's type is read from its content (the first bytes of PNG, JPEG, GIF, WebP, PDF,
WAV, MP3, Ogg, FLAC, M4A files), else from the server's ``Content-Type`` for a URL, else from the
file name's extension; ``--attach-type`` forces it. ``image/*`` is sent as an image, ``audio/*``
as audio, anything else as a document. A fragment is a text file whose text goes into the prompt,
marked with its path. Every mistake (a missing file, an unreadable URL, a type that cannot be
told) is a usage error naming the attachment.
"""

from __future__ import annotations

import base64
import mimetypes
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..messages import AudioContent, DocumentContent, ImageContent, TextContent, UserPart
from .exits import fail

__all__ = [
    "MAX_ATTACHMENT_BYTES",
    "NO_ATTACHMENTS",
    "Attachments",
    "attachment_part",
    "fragment_part",
    "read_attachments",
    "sniff",
]

MAX_ATTACHMENT_BYTES = 50 * 1024 * 1024
"""The largest attachment read (50 MiB): providers refuse far smaller inline content anyway."""

_URL_TIMEOUT = 30.0

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
)


def sniff(data: bytes) -> str | None:
    """The media type the content itself shows, or None."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] in (b"WEBP", b"WAVE"):
        return "image/webp" if data[8:12] == b"WEBP" else "audio/wav"
    if data[4:8] == b"ftyp" and data[8:11] in (b"M4A", b"M4B"):
        return "audio/mp4"
    if len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0 and data[1] & 0x06:  # an MPEG audio frame
        return "audio/mpeg"
    return None


@dataclass(frozen=True, slots=True)
class Attachments:
    """What ``-a`` and ``-f`` add to a prompt: fragments go before its text, attachments after."""

    fragments: tuple[TextContent, ...] = ()
    files: tuple[ImageContent | AudioContent | DocumentContent, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.fragments or self.files)

    def prompt(self, text: str | None) -> str | tuple[UserPart, ...] | None:
        """The prompt with these parts: the text alone when there are none."""
        if not self:
            return text
        middle = (TextContent(text),) if text and text.strip() else ()
        return (*self.fragments, *middle, *self.files)


NO_ATTACHMENTS = Attachments()
"""No ``-a`` or ``-f``."""


def read_attachments(
    attach: Sequence[str], fragments: Sequence[str], attach_type: str | None, encoding: str, stdin: Any = None
) -> tuple[Attachments, bool]:
    """The parts of ``-a`` and ``-f``, and whether standard input was read for them."""
    if attach_type is not None and ("/" not in attach_type or attach_type.startswith("/")):
        fail(f"--attach-type {attach_type!r}: give a media type such as image/png, audio/wav or application/pdf")
    if attach_type is not None and not attach:
        fail("--attach-type needs an attachment: -a PATH|URL|- --attach-type TYPE")
    if list(attach).count("-") > 1:
        fail("-a - reads standard input once: give it at most once")
    stdin = stdin if stdin is not None else sys.stdin
    files = tuple(attachment_part(spec, attach_type, stdin) for spec in attach)
    texts = tuple(fragment_part(path, encoding) for path in fragments)
    return Attachments(texts, files), "-" in attach


def attachment_part(
    spec: str, attach_type: str | None, stdin: Any = None
) -> ImageContent | AudioContent | DocumentContent:
    """One ``-a`` value as a content part."""
    if spec == "-":
        data, declared, name = _read_stdin(stdin if stdin is not None else sys.stdin), None, None
        what = "the attachment on standard input"
    elif spec.startswith(("http://", "https://")):
        data, declared = _download(spec)
        name = Path(spec.split("?", 1)[0].rstrip("/")).name or None
        what = f"attachment {spec}"
    else:
        data, declared, name = _read_file(spec), None, Path(spec).name
        what = f"attachment {spec!r}"
    mime = attach_type or sniff(data) or declared or _guess(name)
    if mime is None:
        mime = "text/plain" if _is_text(data) else None
    if mime is None:
        fail(f"{what}: cannot tell its type from its content or name; pass --attach-type TYPE (e.g. application/pdf)")
    return _part(base64.b64encode(data).decode("ascii"), mime.lower(), name)


def _guess(name: str | None) -> str | None:
    """The type a file name's extension suggests; ``application/octet-stream`` (``.bin``) says nothing."""
    guessed = mimetypes.guess_type(name)[0] if name else None
    return None if guessed == "application/octet-stream" else guessed


def _part(data: str, mime: str, name: str | None) -> ImageContent | AudioContent | DocumentContent:
    if mime.startswith("image/"):
        return ImageContent(data, mime)
    if mime.startswith("audio/"):
        return AudioContent(data, mime)
    return DocumentContent(data, mime, name)


def _is_text(data: bytes) -> bool:
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _read_stdin(stdin: Any) -> bytes:
    if stdin is None or stdin.isatty():
        fail("-a - reads the attachment from standard input: pipe it in (cat photo.png | tooloop run ... -a -)")
    source: BinaryIO | None = getattr(stdin, "buffer", None)
    data = source.read(MAX_ATTACHMENT_BYTES + 1) if source is not None else stdin.read().encode()
    return _bounded(data, "the attachment on standard input")


def _read_file(spec: str) -> bytes:
    path = Path(spec).expanduser()
    if path.is_dir():
        fail(f"attachment {spec!r} is a folder: attach files one by one")
    try:
        with path.open("rb") as file:
            data = file.read(MAX_ATTACHMENT_BYTES + 1)
    except FileNotFoundError:
        fail(f"attachment {spec!r}: no such file")
    except OSError as exc:
        fail(f"attachment {spec!r}: {exc.strerror or exc}")
    return _bounded(data, f"attachment {spec!r}")


def _bounded(data: bytes, what: str) -> bytes:
    if len(data) > MAX_ATTACHMENT_BYTES:
        fail(f"{what} is larger than {MAX_ATTACHMENT_BYTES // (1024 * 1024)} MiB")
    if not data:
        fail(f"{what} is empty")
    return data


def _download(url: str) -> tuple[bytes, str | None]:
    """The body of ``url`` and its declared media type; a failure is a usage error naming the URL."""
    import urllib.error
    import urllib.request

    from .._version import __version__

    request = urllib.request.Request(url, headers={"User-Agent": f"tooloop/{__version__}"})
    try:
        with urllib.request.urlopen(request, timeout=_URL_TIMEOUT) as response:
            data = response.read(MAX_ATTACHMENT_BYTES + 1)
            declared = response.headers.get_content_type() if response.headers.get("Content-Type") else None
    except urllib.error.HTTPError as exc:
        fail(f"attachment {url}: the server answered {exc.code} {exc.reason}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        fail(f"attachment {url}: cannot download it ({reason})")
    if declared in ("application/octet-stream", "binary/octet-stream"):  # says nothing: sniff or guess
        declared = None
    return _bounded(data, f"attachment {url}"), declared


def fragment_part(spec: str, encoding: str = "utf-8") -> TextContent:
    """One ``-f`` file as a text part, marked with its path."""
    from .run import decode_text

    path = Path(spec).expanduser()
    if path.is_dir():
        fail(f"fragment {spec!r} is a folder: give text files one by one")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        fail(f"fragment {spec!r}: no such file")
    except OSError as exc:
        fail(f"fragment {spec!r}: {exc.strerror or exc}")
    text = decode_text(_bounded(data, f"fragment {spec!r}"), encoding, f"fragment {spec!r}")
    return TextContent(f'<file path="{spec}">\n{text.rstrip()}\n</file>')
