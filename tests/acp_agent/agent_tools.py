"""Tools the ACP agent under test serves (imported by the agent subprocess with ``--tool``)."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys

from tooloop import Agent, tool


@tool(metadata={"kind": "think", "title": "Add numbers"})
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


@tool
async def wait_forever(label: str) -> str:
    """Hangs until cancelled; reports that it started on stderr."""
    print(f"wait_forever started: {label}", file=sys.stderr, flush=True)
    await asyncio.sleep(3600)
    return "never"


@tool(requires_approval=True, metadata={"kind": "delete"})
def delete_file(path: str) -> str:
    """Deletes a file (pretend): needs the user's permission."""
    with open(os.environ["ACP_TEST_LOG"], "a") as log:
        log.write(f"deleted {path}\n")
    return f"deleted {path}"


@tool
def noisy(text: str) -> str:
    """Writes to stdout every way a tool can: print, the file descriptor, logging, a child process."""
    print(f"print: {text}")
    sys.stdout.write(f"sys.stdout: {text}\n")
    sys.stdout.flush()
    os.write(1, f"fd 1: {text}\n".encode())
    logging.getLogger("noisy").warning("logged: %s", text)
    subprocess.run([sys.executable, "-c", f"print('child: {text}')"], check=True)
    return f"noisy {text}"


ALL = [add, explode, wait_forever, delete_file, noisy]


# A subagent: the helper's calls that need permission are asked about through the editor.
delegate = Agent("openai:gpt-4.1-mini", tools=[delete_file]).as_tool(
    name="delegate", description="Hands a task to a helper agent that can delete files."
)
