"""A SQLite store this process may only read (a read-only file system here) still shows its
sessions; a write says the store is read-only instead of "unable to open database file"."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tooloop import AssistantMessage, UserMessage
from tooloop.store import open_store

READ_ONLY_MOUNT = 'mount --bind -o ro "$0" "$0" && exec "$@"'


def _read_only(folder: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """``command`` run where ``folder`` is a read-only mount (a private mount namespace)."""
    return subprocess.run(
        ["unshare", "--map-root-user", "--mount", "sh", "-c", READ_ONLY_MOUNT, str(folder), *command],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    if shutil.which("unshare") is None or _read_only(tmp_path, "true").returncode != 0:
        pytest.skip("this machine cannot make a read-only mount (unshare --map-root-user --mount)")

    async def write() -> None:
        async with open_store(f"sqlite:///{tmp_path / 'sessions.db'}") as store:
            await store.append("s1", [UserMessage("hello"), AssistantMessage("hi there")])

    asyncio.run(write())
    return tmp_path / "sessions.db"


def test_a_read_only_store_still_lists_and_shows_sessions(stored: Path) -> None:
    url = f"sqlite:///{stored}"
    shown = _read_only(stored.parent, sys.executable, "-m", "tooloop", "sessions", "show", "s1", "--store", url)
    assert shown.returncode == 0, shown.stderr
    assert "user: hello" in shown.stdout and "assistant: hi there" in shown.stdout
    listed = _read_only(stored.parent, sys.executable, "-m", "tooloop", "sessions", "list", "--store", url)
    assert listed.returncode == 0, listed.stderr
    assert "s1" in listed.stdout


SCRIPT = """
import asyncio, sys
from tooloop import StoreError, UserMessage
from tooloop.store import open_store

async def main():
    async with open_store(sys.argv[1]) as store:
        print([m.text for m in await store.load("s1")])
        try:
            await store.append("s1", [UserMessage("more")])
        except StoreError as exc:
            print(exc)

asyncio.run(main())
"""


def test_a_write_to_a_read_only_store_says_it_is_read_only(stored: Path) -> None:
    ran = _read_only(stored.parent, sys.executable, "-c", SCRIPT, f"sqlite:///{stored}")
    assert ran.returncode == 0, ran.stderr
    loaded, refused = ran.stdout.splitlines()
    assert loaded == "['hello', 'hi there']"
    assert refused == (
        f"the SQLite store {str(stored)!r} is read-only to this process: its sessions can be read, not written "
        "(check the permissions of the file and of its folder)"
    )
