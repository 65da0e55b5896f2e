"""Counting a worker process's instructions between two marks with valgrind (callgrind).

The worker calls ``os.sched_yield()`` where counting starts and again where it ends; valgrind
dumps a part of the profile at each call, so the last part holds what ran between the marks
(start-up, imports and warm-up stay out).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path


def counted(command: list[str]) -> tuple[int, str]:
    """Instructions ``command`` executes between its two ``sched_yield`` marks, and its stdout."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-before=sched_yield", *command],
            capture_output=True,
            text=True,
            check=False,
        )
        parts = sorted(Path(folder).glob("callgrind.out.*"))
        if done.returncode != 0 or len(parts) != 2:
            raise RuntimeError(f"valgrind run failed ({len(parts)} marks):\n{done.stderr[-2000:]}")
        found = re.search(r"^totals: (\d+)", parts[1].read_text(), re.MULTILINE)  # part 2: between the marks
    if found is None:
        raise RuntimeError("no totals in the counted part of the profile")
    return int(found.group(1)), done.stdout
