"""A batch killed with SIGKILL and run again records every id exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tooloop.batch import BatchItem, run_many_sync

ROOT = Path(__file__).resolve().parents[2]
COUNT = 10_000


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def children_of(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.timeout(300)
def test_sigkill_mid_run_then_rerun_records_every_id_exactly_once(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    parent = subprocess.Popen(
        [sys.executable, "-m", "tests.batch.kill_target", str(out), str(COUNT), "2"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"},
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: line_count(out) >= 1_000, 120, "the batch to record 1,000 conversations")
        workers = {pid for pid in children_of(parent.pid) if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()}
        assert len(workers) == 2
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_for(lambda: not any(alive(pid) for pid in workers), 10, "orphaned workers to exit")
    finally:
        parent.kill()
    killed_at = line_count(out)
    assert 1_000 <= killed_at < COUNT

    items = [BatchItem(f"item-{i}", f"key{i}") for i in range(COUNT)]
    summary = run_many_sync("tests.batch.agents:offline_agent", items, concurrency=50, results=out, processes=2)

    records = [json.loads(line) for line in out.read_text().splitlines()]
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids)) == COUNT
    assert all(r["text"] == f"answer: value-of-key{r['id'].split('-')[1]}" for r in records)
    assert summary.skipped + summary.finished == COUNT and summary.errors == 0
    assert summary.skipped >= killed_at - 1  # at most one partial line was cut
