"""Instructions per captured answer read (not a test): ``python bench/capture_read.py [-n N]``.

Records the answers of ``bench/rollout_capture.py``'s conversations (model -> ``lookup`` -> answer)
from ``tooloop.testing.token_server``, with ``capture_tokens`` on and off, then counts with
valgrind's callgrind what reading them costs the OpenAI-compatible adapter: an answer without
capture is parsed as ``_plain`` does (``loads``, ``parse_completion``), a captured one as
``_capture_messages`` does (``read_captured``, then kept after the previous turn's tokens or a
shared prompt start). ``--wide-ids`` moves every id above 100,000 and gives each logprob entry
its ``bytes``, as a real vocabulary and vLLM do (the token server's ids are bytes, 0-257);
``--compact`` writes each answer without spaces after ``,`` and ``:``, as vLLM's and SGLang's
servers do (the token server writes Python's default ``", "`` and ``": "``).
Each figure is the instructions between two marks (``os.sched_yield``) divided by the answers read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]

from _callgrind import counted  # noqa: E402


def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


def _answers(capture: bool, conversations: int, wide: bool, compact: bool = False) -> list[bytes]:
    """The raw answers of ``conversations`` conversations, in order (two per conversation)."""
    from tooloop import Agent
    from tooloop.models import get_model
    from tooloop.testing.token_server import Sample, serve

    def policy(messages: list[dict[str, Any]], _: int) -> Sample:
        if not any(m["role"] == "tool" for m in messages):
            return Sample(text="let me look", calls=(("lookup", {"key": f"{messages[0]['content']} 0"}),))
        return Sample(text=f"answer: {messages[-1]['content']}")

    answers: list[bytes] = []
    with serve(policy) as server:
        chat = server.chat

        def recorded(body: dict[str, Any]) -> tuple[bytes, bytes]:
            kind, data = chat(body)
            data = _widened(data) if wide and capture else data
            answers.append(json.dumps(json.loads(data), separators=(",", ":")).encode() if compact else data)
            return kind, data

        server.chat = recorded  # type: ignore[method-assign]
        agent = Agent(get_model("vllm:toy", base_url=server.url, capture_tokens=capture), tools=[lookup])
        for i in range(conversations):
            agent.run_sync(f"key number {i} " * 4)
    return answers


def _widened(data: bytes) -> bytes:
    answer = json.loads(data)
    answer["prompt_token_ids"] = [t + 100_000 for t in answer["prompt_token_ids"]]
    choice = answer["choices"][0]
    choice["token_ids"] = [t + 100_000 for t in choice["token_ids"]]
    for item in choice["logprobs"]["content"]:
        item["bytes"] = list(item["token"].encode())
    return json.dumps(answer).encode()


def _worker(capture: bool, conversations: int, wide: bool, compact: bool) -> None:
    from tooloop.models.openai_chat.response import parse_completion
    from tooloop.models.openai_chat.tokens import PromptHeads, kept, read_captured
    from tooloop.transport.client import loads

    answers = _answers(capture, conversations, wide, compact)
    heads = PromptHeads()

    def read_all() -> None:
        previous = None
        for number, raw in enumerate(answers):
            if not capture:
                parse_completion(loads(raw), "vllm")
                continue
            read = read_captured(raw, "vllm")
            assert read is not None and read[1].ok, read
            tokens = kept(read[1], previous if number % 2 else None, heads)
            previous = tokens

    read_all()  # warm-up: first calls, caches
    os.sched_yield()
    read_all()
    os.sched_yield()


def count(capture: bool, conversations: int, wide: bool, compact: bool) -> float:
    """Instructions per answer read."""
    command = [sys.executable, __file__, "--worker", "1" if capture else "0", "-n", str(conversations)]
    command += ["--wide-ids"] if wide else []
    command += ["--compact"] if compact else []
    return counted(command)[0] / (2 * conversations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100, help="conversations (two answers each)")
    parser.add_argument("--wide-ids", action="store_true", help="ids above 100,000 and bytes per logprob entry")
    parser.add_argument("--compact", action="store_true", help="answers without spaces, as vLLM and SGLang send them")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        _worker(args.worker == "1", args.n, args.wide_ids, args.compact)
        return
    off = count(False, args.n, args.wide_ids, args.compact)
    on = count(True, args.n, args.wide_ids, args.compact)
    print(f"instructions per answer read: {off / 1e6:.3f} M without capture, {on / 1e6:.3f} M with (x{on / off:.1f})")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
