"""``tooloop web`` as a command: what it prints, --open, and clear errors before it serves."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from .conftest import start_web


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tooloop", "web", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)


def test_a_malformed_store_url_is_refused_before_serving() -> None:
    result = _run("--store", "sqlite:sessions.db", "--port", "0")
    assert result.returncode == 2
    assert "tooloop web: " in result.stderr and "sqlite:///" in result.stderr
    assert result.stdout == ""


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _run("--store", f"sqlite:///{tmp_path}/s.db", "--port", str(port))
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "--port" in result.stderr
    assert "Traceback" not in result.stderr


def test_open_hands_the_address_with_its_token_to_the_browser(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.py"
    # Written aside, then renamed: the test never reads a file that exists but is not written yet.
    recorder.write_text(
        f"import os, pathlib, sys\npathlib.Path({str(opened)!r} + '.part').write_text(sys.argv[1])\n"
        f"os.replace({str(opened)!r} + '.part', {str(opened)!r})\n"
    )
    os.environ["BROWSER"] = f"{sys.executable} {recorder} %s"
    try:
        server = start_web(f"sqlite:///{tmp_path}/s.db", tmp_path, "--open")
    finally:
        del os.environ["BROWSER"]
    try:
        deadline = time.monotonic() + 20
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert opened.read_text() == server.address
        assert server.token is not None and server.address.endswith(f"/?token={server.token}")
    finally:
        server.process.terminate()
        server.process.wait(10)
        if server.process.stdout is not None:
            server.process.stdout.close()


def test_an_unreadable_store_is_reported_in_the_page_and_the_server_keeps_serving(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    (tmp_path / "garbage.db").write_bytes(b"this is not an SQLite database at all" * 100)
    server = start_web(f"sqlite:///{tmp_path}/garbage.db", tmp_path, "--no-token")
    try:
        for _ in range(2):  # the first failure does not take the server down
            try:
                urllib.request.urlopen(server.base + "/", timeout=20)
                raise AssertionError("expected 503")
            except urllib.error.HTTPError as error:
                assert error.code == 503
                assert "the store cannot be read" in error.read().decode()
    finally:
        server.process.terminate()
        server.process.wait(10)
        if server.process.stdout is not None:
            server.process.stdout.close()
