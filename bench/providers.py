"""Every provider and both front doors against the floor of their own wire format, in one run.

A scripted server (``bench/mock_wire.py``, its own process, pinned to its own CPU when there are
two or more) speaks OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and Gemini.
Per provider four contestants run the same conversations (K parallel ``add`` calls per turn for
T turns, then the answer):

* ``floor``: the loop on raw asyncio sockets and orjson, plain JSON answers (``bench/_floors.py``);
* ``floor_sse``: the same loop asking for the provider's event stream, read delta by delta;
* ``run``: ``await Agent(model, tools=[add]).run(prompt)`` (plain answers);
* ``stream``: ``async for event in agent.stream(prompt)``, every event consumed (streamed answers),

where ``model`` is ``get_model("openai-compatible:..." | "openai-responses:..." | "anthropic:..." |
"google:...", base_url=<the mock>, api_key="mock", max_retries=0)``. ``run`` is measured against
``floor``, ``stream`` against ``floor_sse``. Phases (``--phases``), each interleaved across all
contestants of all providers, the order rotated every repetition:

* ``cpu``: client CPU per conversation one at a time, K=1 and K=4, T=3 (medians of ``--reps``
  repetitions of ``--n`` conversations);
* ``burst``: ``--level`` (1,000) concurrent conversations, K=1 T=3, 50 ms per model request, each
  trial a fresh process (``--trials``): conversations per second, peak RSS (VmHWM), client CPU;
* ``imports``: wall and CPU time of the whole ``python -c "import tooloop"`` and ``python -c "from
  tooloop import Agent, get_model"`` processes against ``python -c "import orjson, msgspec"`` and a
  bare interpreter (``--import-reps``, interleaved);
* ``first``: a fresh process: ``from tooloop import Agent, get_model``, ``get_model`` (the
  adapter's import), ``Agent(model, tools=[add])`` (the tool's schema) and the first request (a
  one-request conversation: the connection, the request); the floor's likewise;

The ``imports`` and ``first`` phases run their processes with bytecode caching allowed (without
``PYTHONDONTWRITEBYTECODE``) after one warm-up process each, as an installed package runs: an
editable install in an environment that forbids ``.pyc`` files compiles every module from source
in every process, which no installed user pays.
* ``long``: T = 3, 10 and 30 tool turns with realistic sizes (~300 characters of text before each
  turn's call, ~2 KB tool results): client CPU per request against the JSON bytes per request
  (counted by the mock), for ``floor`` and ``run``.

Prints the figures, then every target of issue 24 with the measure, its line and pass/fail, and
writes both to ``bench/results/providers-<time>.{md,json}`` (git-ignored).

    python bench/providers.py                                   # full run, ~10 min on 2 cores
    python bench/providers.py --quick                           # smoke run
    python bench/providers.py --phases cpu --providers anthropic,gemini --reps 15
    bench/run_peers.sh --providers                              # the same, in the bench venv

Runs the tooloop of ``src/`` next to this folder, or the one PYTHONPATH names when it is set. Needs ``httptools`` and
``orjson`` (tooloop's own dependencies), and ``openai`` while the Responses adapter uses it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# the tooloop of src/ next to this folder, unless PYTHONPATH says which one (another tree's src/)
sys.path[:0] = [str(HERE)] if os.environ.get("PYTHONPATH") else [str(REPO / "src"), str(HERE)]

from _floors import FLOORS, Conversation  # noqa: E402

PROVIDERS = tuple(FLOORS)
DOORS = ("floor", "floor_sse", "run", "stream")
FLOOR_OF = {"run": "floor", "stream": "floor_sse"}
PROMPT = "Add some numbers with the add tool, then tell me the total."
MODEL_PREFIX = {
    "openai_chat": "openai-compatible:",
    "openai_responses": "openai-responses:",
    "anthropic": "anthropic:",
    "gemini": "google:",
}
# issue 24's lines: CPU at most 2x the floor, conversations/s at least 0.6x (OpenAI Chat) or 0.5x,
# peak RSS at most 1.4x, import at most 1.3x a bare `import orjson, msgspec` process
MAX_CPU, MAX_RSS, MAX_IMPORT = 2.0, 1.4, 1.3
MIN_RATE = {"openai_chat": 0.6, "openai_responses": 0.5, "anthropic": 0.5, "gemini": 0.5}
RESULT = '{"rows": [' + ", ".join(f'{{"id": {i}, "value": "{"x" * 40}", "ok": true}}' for i in range(30)) + "]}"


async def add(a: int, b: int) -> int:
    """Add two integers and return their sum."""
    return a + b


async def add_report(a: int, b: int) -> str:
    """Add two integers and return a report with their sum."""
    return f"{a + b} " + RESULT


def expected(k: int, t: int) -> str:
    """The mock's final total: call i of turn r adds (10 r + i + 1) and (i + 2)."""
    return str(sum(10 * r + 2 * i + 3 for r in range(t) for i in range(k)))


def rotated(names: list[str], rep: int) -> list[str]:
    i = rep % len(names)
    return names[i:] + names[:i]


# ---------------------------------------------------------------- contestants


def build(name: str, url: str, model: str, tool: Callable[..., Awaitable[Any]] = add) -> tuple[Conversation, Any]:
    """A contestant ``provider/door``: one conversation per call, and what closes it."""
    provider, door = name.split("/")
    if door in ("floor", "floor_sse"):
        run, pool = FLOORS[provider](url, model, tool, door == "floor_sse")
        return run, pool.close
    llm = tooloop_model(provider, url, model)
    return tooloop_door(llm, door, tool), llm.aclose


def tooloop_model(provider: str, url: str, model: str) -> Any:
    """``get_model`` for the provider, pointed at the mock."""
    from tooloop import get_model

    base = url + "/v1" if provider.startswith("openai") else url
    return get_model(MODEL_PREFIX[provider] + model, base_url=base, api_key="mock", max_retries=0)


def tooloop_door(llm: Any, door: str, tool: Callable[..., Awaitable[Any]]) -> Conversation:
    """``Agent(llm, tools=[tool])``'s ``run`` or ``stream`` front door as one conversation."""
    from tooloop import Agent, Limits, RunFinished

    agent = Agent(llm, tools=[tool], limits=Limits(max_turns=100))

    async def run_door(prompt: str) -> str:
        return (await agent.run(prompt)).text

    async def stream_door(prompt: str) -> str:
        async for event in agent.stream(prompt):
            if isinstance(event, RunFinished):
                return event.result.text
        raise RuntimeError("the stream ended without RunFinished")

    return run_door if door == "run" else stream_door


def contestants(providers: list[str]) -> list[str]:
    return [f"{p}/{d}" for p in providers for d in DOORS]


class Mock:
    """``mock_wire.py`` in a child process, pinned to the last CPU (and this process off it);
    ``command`` starts another server instead that prints its port the same way."""

    def __init__(self, chunked: bool = False, command: list[str] | None = None) -> None:
        cpus = sorted(os.sched_getaffinity(0))
        self.pinned = len(cpus) >= 2
        pre = (lambda: os.sched_setaffinity(0, {cpus[-1]})) if self.pinned else None
        if command is None:
            command = [sys.executable, str(HERE / "mock_wire.py"), *(["--chunked"] if chunked else [])]
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, preexec_fn=pre)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline().split()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        if self.pinned:
            os.sched_setaffinity(0, set(cpus[:-1]))

    async def stats(self) -> dict[str, float]:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(b"GET /stats HTTP/1.1\r\nhost: mock\r\nconnection: close\r\n\r\n")
        raw = await reader.read()
        writer.close()
        out: dict[str, float] = json.loads(raw.split(b"\r\n\r\n", 1)[1])
        return out

    def close(self) -> None:
        self.proc.terminate()  # the server this script started, by its handle
        self.proc.wait(10)


# ---------------------------------------------------------------- phases


async def cpu_phase(names: list[str], url: str, k: int, reps: int, n: int) -> dict[str, float]:
    """Client CPU seconds per conversation one at a time (K=k, T=3), medians over interleaved rounds."""
    model, want = f"mock-k{k}-t3", expected(k, 3)
    built = {name: build(name, url, model) for name in names}
    try:
        for name, (run, _) in built.items():
            for _ in range(3):
                answer = await run(PROMPT)
                assert want in answer, f"{name}: wrong answer {answer!r}, want {want}"
        cpu: dict[str, list[float]] = {name: [] for name in names}
        for rep in range(reps):
            for name in rotated(names, rep):
                run = built[name][0]
                gc.collect()
                c0 = time.process_time()
                for _ in range(n):
                    await run(PROMPT)
                cpu[name].append((time.process_time() - c0) / n)
        return {name: statistics.median(values) for name, values in cpu.items()}
    finally:
        for _, close in built.values():
            await close()


def peak_mb(field: str) -> float:
    """VmRSS / VmHWM of this process (not ru_maxrss: Linux carries that over from the parent)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def burst_worker(name: str, url: str, level: int) -> dict[str, Any]:
    """Inside a fresh process: ``level`` concurrent conversations, K=1 T=3, 50 ms per request."""
    run, close = build(name, url, "mock-k1-t3-l50")
    want = expected(1, 3)
    assert want in await run(PROMPT)
    rss0 = peak_mb("VmRSS")
    c0, t0 = time.process_time(), time.perf_counter()
    answers = await asyncio.gather(*(run(PROMPT) for _ in range(level)), return_exceptions=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    failed = [a for a in answers if isinstance(a, BaseException) or want not in a]
    await close()
    return {
        "conv_per_s": (level - len(failed)) / wall,
        "cpu_s": cpu,
        "peak_rss_mb": peak_mb("VmHWM"),
        "rss_before_mb": rss0,
        "failed": len(failed),
        "first_error": next((repr(a)[:200] for a in answers if isinstance(a, BaseException)), ""),
    }


def burst_phase(names: list[str], mock: Mock, level: int, trials: int) -> dict[str, dict[str, Any]]:
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for rep in range(trials):
        for name in rotated(names, rep):
            command = [sys.executable, __file__, "--worker", name, "--url", mock.url, "--level", str(level)]
            before = asyncio.run(mock.stats())
            done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
            if done.returncode:
                raise RuntimeError(f"worker {name} failed:\n{done.stderr[-3000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            # the mock's CPU over the whole worker process (start-up included): under 100% it kept up
            result["mock_cpu_s"] = asyncio.run(mock.stats())["cpu_s"] - before["cpu_s"]
            runs[name].append(result)
            print(
                f"    {name:26} {result['conv_per_s']:7.0f} conv/s  peak RSS {result['peak_rss_mb']:5.1f} MB"
                f"  CPU {result['cpu_s']:.2f} s  mock CPU {result['mock_cpu_s']:.2f} s  failed {result['failed']}",
                flush=True,
            )
    return {name: _medians(rs) for name, rs in runs.items()}


def _medians(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of every measure over the trials; failed conversations summed."""
    out: dict[str, Any] = {key: statistics.median(t[key] for t in trials) for key in trials[0] if key != "first_error"}
    out["failed"] = sum(t["failed"] for t in trials)
    out["first_error"] = next((t["first_error"] for t in trials if t["first_error"]), "")
    return out


def _env() -> dict[str, str]:
    """This environment, with PYTHONPATH naming the tooloop this process measures."""
    return {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(REPO / "src")}


def _cached_env() -> dict[str, str]:
    """:func:`_env` with bytecode caching allowed, as an installed package has it: a child that
    imports a module compiled since its last change reads its ``.pyc`` instead of the source."""
    return {key: value for key, value in _env().items() if key != "PYTHONDONTWRITEBYTECODE"}


IMPORT_CODES = {
    "bare": "pass",
    "orjson_msgspec": "import orjson, msgspec",
    "tooloop": "import tooloop",
    "tooloop_used": "from tooloop import Agent, get_model",
}
"""The processes of the imports phase. ``import tooloop`` alone loads only the package's version
(every public name is imported on first use); ``from tooloop import Agent, get_model`` is what a
program that runs an agent pays before its first call."""


def import_phase(reps: int) -> dict[str, float]:
    """Median wall seconds (``KEY``) and CPU seconds (``KEY_cpu``, user + system) of a whole
    ``python -c CODE`` process, for each code; bytecode cached (one warm-up run of each first)."""
    env = _cached_env()

    def timed(code: str) -> tuple[float, float]:
        t0 = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", code], env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            raise RuntimeError(f"python -c {code!r} exited with {child.returncode}")
        return wall, usage.ru_utime + usage.ru_stime

    for code in IMPORT_CODES.values():
        timed(code)  # the page cache warm and the .pyc files written
    samples: dict[str, list[tuple[float, float]]] = {key: [] for key in IMPORT_CODES}
    for rep in range(reps):
        for key in rotated(list(IMPORT_CODES), rep):
            samples[key].append(timed(IMPORT_CODES[key]))
    out = {key: statistics.median(w for w, _ in values) for key, values in samples.items()}
    return out | {f"{key}_cpu": statistics.median(c for _, c in values) for key, values in samples.items()}


FIRST_STEPS = ("import", "model", "agent", "first", "second")


async def first_worker(name: str, url: str) -> dict[str, float]:
    """Inside a fresh process (the bench's own imports done: asyncio, json, orjson): for tooloop's
    doors ``from tooloop import Agent, get_model``, the model (the adapter's import), the agent (its
    tool's schema), the first conversation of one request, the second; wall and CPU seconds of each."""
    provider, door = name.split("/")
    clock: list[tuple[float, float]] = [(time.perf_counter(), time.process_time())]
    if door.startswith("floor"):
        run, close = build(name, url, "mock-k1-t0")
        clock += [clock[0], clock[0], (time.perf_counter(), time.process_time())]
    else:
        from tooloop import Agent, get_model  # noqa: F401  (timed: what a program pays to start)

        clock.append((time.perf_counter(), time.process_time()))
        llm = tooloop_model(provider, url, "mock-k1-t0")
        clock.append((time.perf_counter(), time.process_time()))
        run, close = tooloop_door(llm, door, add), llm.aclose
        clock.append((time.perf_counter(), time.process_time()))
    first = await run(PROMPT)
    clock.append((time.perf_counter(), time.process_time()))
    second = await run(PROMPT)
    clock.append((time.perf_counter(), time.process_time()))
    assert "The total is 0." in first and first == second, first
    await close()
    out = {f"{step}_s": clock[i + 1][0] - clock[i][0] for i, step in enumerate(FIRST_STEPS)}
    out |= {f"{step}_cpu_s": clock[i + 1][1] - clock[i][1] for i, step in enumerate(FIRST_STEPS)}
    return out


def first_phase(names: list[str], url: str, reps: int) -> dict[str, dict[str, float]]:
    """Medians over ``reps`` fresh processes per contestant, bytecode cached (a warm-up process each)."""
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in names}

    def worker(name: str) -> dict[str, float]:
        command = [sys.executable, __file__, "--first-worker", name, "--url", url]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=_cached_env(), check=False)
        if done.returncode:
            raise RuntimeError(f"worker {name} failed:\n{done.stderr[-3000:]}")
        found: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
        return found

    for name in names:
        worker(name)  # the .pyc files of everything this contestant imports written
    for rep in range(reps):
        for name in rotated(names, rep):
            samples[name].append(worker(name))
    return {name: {key: statistics.median(s[key] for s in rs) for key in rs[0]} for name, rs in samples.items()}


async def long_phase(names: list[str], mock: Mock, turns: int, reps: int, n: int) -> dict[str, dict[str, float]]:
    """CPU and JSON bytes per request with ``turns`` tool turns and realistic sizes."""
    model = f"mock-k1-t{turns}-s1"
    want = expected(1, turns)
    built = {name: build(name, mock.url, model, add_report) for name in names}
    try:
        for name, (run, _) in built.items():
            answer = await run(PROMPT)
            assert want in answer, f"{name}: wrong answer {answer!r}, want {want}"
        cpu: dict[str, list[float]] = {name: [] for name in names}
        sent: dict[str, list[float]] = {name: [] for name in names}
        for rep in range(reps):
            for name in rotated(names, rep):
                run = built[name][0]
                before = await mock.stats()
                gc.collect()
                c0 = time.process_time()
                for _ in range(n):
                    await run(PROMPT)
                cpu[name].append((time.process_time() - c0) / (n * (turns + 1)))
                after = await mock.stats()
                sent[name].append(
                    (after["request_bytes"] - before["request_bytes"]) / (after["requests"] - before["requests"])
                )
        return {name: {"cpu_s": statistics.median(cpu[name]), "bytes": statistics.median(sent[name])} for name in names}
    finally:
        for _, close in built.values():
            await close()


# ---------------------------------------------------------------- report


def _growth(burst: dict[str, float]) -> float:
    """Peak RSS over the RSS before the burst: what the conversations themselves held."""
    return burst["peak_rss_mb"] - burst["rss_before_mb"]


def _x(value: float, base: float) -> float:
    return value / base if base else float("nan")


def figures(res: dict[str, Any], providers: list[str]) -> list[str]:
    """The measured figures, one table per phase."""
    tables = (("cpu_k1", _cpu_table), ("burst", _burst_table), ("imports", _import_table), ("first", _first_table))
    lines = [line for key, table in tables if key in res for line in table(res, providers)]
    return lines + (_long_table(res, providers) if "long" in res else [])


def _cpu_table(res: dict[str, Any], providers: list[str]) -> list[str]:
    lines = [
        "### Client CPU per conversation, T=3, one at a time (medians)",
        "",
        "| provider | K | floor ms | run() ms | x floor | floor_sse ms | stream() ms | x floor_sse | stream x floor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in providers:
        for k in (1, 4):
            c = {d: res[f"cpu_k{k}"][f"{p}/{d}"] * 1e3 for d in DOORS}
            lines.append(
                f"| {p} | {k} | {c['floor']:.2f} | {c['run']:.2f} | {_x(c['run'], c['floor']):.2f}x | "
                f"{c['floor_sse']:.2f} | {c['stream']:.2f} | {_x(c['stream'], c['floor_sse']):.2f}x | "
                f"{_x(c['stream'], c['floor']):.2f}x |"
            )
    return [*lines, ""]


def _burst_table(res: dict[str, Any], providers: list[str]) -> list[str]:
    b = res["burst"]
    lines = [
        f"### {res['level']:,} concurrent conversations, K=1 T=3, 50 ms per request (fresh processes, medians)",
        "",
        "| provider | contestant | conv/s | x floor | peak RSS MB | x floor | RSS before MB | client CPU s "
        "| mock CPU s | failed |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in providers:
        for d in DOORS:
            r, f = b[f"{p}/{d}"], b[f"{p}/{FLOOR_OF.get(d, d)}"]
            lines.append(
                f"| {p} | {d} | {r['conv_per_s']:.0f} | {_x(r['conv_per_s'], f['conv_per_s']):.2f}x | "
                f"{r['peak_rss_mb']:.1f} | {_x(r['peak_rss_mb'], f['peak_rss_mb']):.2f}x | "
                f"{r['rss_before_mb']:.1f} | {r['cpu_s']:.2f} | {r['mock_cpu_s']:.2f} | {r['failed']:.0f} |"
            )
    errors = [f"* {name}: {r['first_error']}" for name, r in b.items() if r.get("first_error")]
    return [*lines, "", *(["Failed conversations, the first error of each:", "", *errors, ""] if errors else [])]


def _import_table(res: dict[str, Any], providers: list[str]) -> list[str]:
    i = res["imports"]
    lines = [
        "### Import (the whole `python -c CODE` process, bytecode cached; medians)",
        "",
        "| process | wall ms | over a bare interpreter ms | CPU ms |",
        "|---|---:|---:|---:|",
    ]
    for key, code in IMPORT_CODES.items():
        if key in i:
            cpu = i.get(f"{key}_cpu", float("nan")) * 1e3
            lines.append(
                f'| `python -c "{code}"` | {i[key] * 1e3:.0f} | {(i[key] - i["bare"]) * 1e3:.0f} | {cpu:.0f} |'
            )
    return [*lines, ""]


def _first_table(res: dict[str, Any], providers: list[str]) -> list[str]:
    lines = [
        "### A fresh process to its first answers (bytecode cached; medians; wall ms, CPU ms in brackets)",
        "",
        "| provider | contestant | `from tooloop import Agent, get_model` | get_model (adapter import) "
        "| Agent(tools=[add]) | first request | import + model + agent + first | second request |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    steps = ("import", "model", "agent", "first")
    for name, found in res["first"].items():
        p, d = name.split("/")
        r = {f"{s}{c}": found.get(f"{s}{c}", float("nan")) for s in (*steps, "second") for c in ("_s", "_cpu_s")}
        if "import_s" not in found:  # a run from before the import was timed here
            r["import_s"] = r["import_cpu_s"] = 0.0
        cells = [f"{r[f'{s}_s'] * 1e3:.1f} [{r[f'{s}_cpu_s'] * 1e3:.1f}]" for s in steps]
        total = sum(r[f"{s}_s"] for s in steps)
        second = f"{r['second_s'] * 1e3:.2f} [{r['second_cpu_s'] * 1e3:.2f}]"
        lines.append(f"| {p} | {d} | {' | '.join(cells)} | {total * 1e3:.1f} | {second} |")
    return [*lines, ""]


def _long_table(res: dict[str, Any], providers: list[str]) -> list[str]:
    lines = [
        "### Long histories (~300 characters of text per assistant turn, ~2 KB tool results; per request)",
        "",
        "| provider | T | floor µs | run() µs | x floor | JSON KB sent by run() | run() CPU vs T=3 | JSON vs T=3 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    long = res["long"]
    first_t = min(long, key=int)
    for p in providers:
        for t in sorted(long, key=int):
            f, r, r0 = long[t][f"{p}/floor"], long[t][f"{p}/run"], long[first_t][f"{p}/run"]
            lines.append(
                f"| {p} | {t} | {f['cpu_s'] * 1e6:.0f} | {r['cpu_s'] * 1e6:.0f} | "
                f"{_x(r['cpu_s'], f['cpu_s']):.2f}x | {r['bytes'] / 1024:.1f} | "
                f"{_x(r['cpu_s'], r0['cpu_s']):.2f}x | {_x(r['bytes'], r0['bytes']):.2f}x |"
            )
    return [*lines, ""]


def targets(res: dict[str, Any], providers: list[str]) -> list[tuple[str, str, str, float, str, bool]]:
    """(target, provider, front door, measured ratio, line, met) for every target measured."""
    rows: list[tuple[str, str, str, float, str, bool]] = []
    for p in providers:
        for door, floor in FLOOR_OF.items():
            for k in (1, 4):
                if f"cpu_k{k}" in res:
                    x = _x(res[f"cpu_k{k}"][f"{p}/{door}"], res[f"cpu_k{k}"][f"{p}/{floor}"])
                    rows.append((f"CPU/conversation K={k} T=3", p, door, x, f"<= {MAX_CPU}x", x <= MAX_CPU))
            if "burst" in res:
                b = res["burst"]
                x = _x(b[f"{p}/{door}"]["conv_per_s"], b[f"{p}/{floor}"]["conv_per_s"])
                rows.append(
                    (f"conv/s at {res['level']:,} concurrent", p, door, x, f">= {MIN_RATE[p]}x", x >= MIN_RATE[p])
                )
                x = _x(b[f"{p}/{door}"]["peak_rss_mb"], b[f"{p}/{floor}"]["peak_rss_mb"])
                rows.append((f"peak RSS at {res['level']:,} concurrent", p, door, x, f"<= {MAX_RSS}x", x <= MAX_RSS))
                x = _x(_growth(b[f"{p}/{door}"]), _growth(b[f"{p}/{floor}"]))
                rows.append(
                    (f"RSS growth during the burst, {res['level']:,} (information)", p, door, x, "no line", True)
                )
        if "long" in res:
            long = res["long"]
            lo, hi = min(long, key=int), max(long, key=int)
            cpu = _x(long[hi][f"{p}/run"]["cpu_s"], long[lo][f"{p}/run"]["cpu_s"])
            sent = _x(long[hi][f"{p}/run"]["bytes"], long[lo][f"{p}/run"]["bytes"])
            rows.append(
                (
                    f"long history: CPU/request growth T={lo}->{hi} / JSON growth",
                    p,
                    "run",
                    cpu / sent,
                    "<= 1.0",
                    cpu <= sent,
                )
            )
    if "imports" in res:
        i = res["imports"]
        for key in ("tooloop", "tooloop_used"):
            if key in i:
                x = _x(i[key], i["orjson_msgspec"])
                what = f"`{IMPORT_CODES[key]}` process vs `import orjson, msgspec` (wall)"
                rows.append((what, "-", "-", x, f"<= {MAX_IMPORT}x", x <= MAX_IMPORT))
    return rows


def glance(rows: list[tuple[str, str, str, float, str, bool]], providers: list[str]) -> list[str]:
    """The targets as one matrix: a row per target, a column per provider and front door."""
    columns = [(p, d) for p in providers for d in FLOOR_OF]
    lines = [
        "| target (line) | " + " | ".join(f"{p} {d}()" for p, d in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for target in dict.fromkeys(t for t, p, *_ in rows if p != "-"):
        found = {(p, d): (x, line, ok) for t, p, d, x, line, ok in rows if t == target}
        line = " or ".join(dict.fromkeys(v[1] for v in found.values()))
        cells = [(f"{found[c][0]:.2f}x" + ("" if found[c][2] else " ✗")) if c in found else "" for c in columns]
        lines.append(f"| {target} ({line}) | " + " | ".join(cells) + " |")
    return [*lines, "", "(✗: the line is missed)", ""]


def report(res: dict[str, Any], providers: list[str], command: str) -> str:
    rows = targets(res, providers)
    lines = [
        f"Command: `{command}`",
        "",
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs; mock pinned to its own CPU: {res['pinned']}; "
        f"SSE framing: {'chunked, one HTTP chunk per event' if res['chunked'] else 'content-length'}; "
        f"load average {res['load_before']} before, {res['load_after']} after; "
        f"{res['started']} - {res['finished']} UTC; tree {res['commit']}.",
        "",
        "### Targets (issue 24; ratios to the floor of the same wire format; run() vs floor, stream() vs floor_sse)",
        "",
        "| target | provider | front door | measured | line | |",
        "|---|---|---|---:|---|---|",
    ]
    lines += [
        f"| {t} | {p} | {d} | {x:.2f}x | {line} | {'pass' if ok else '**FAIL**'} |" for t, p, d, x, line, ok in rows
    ]
    lines += ["", *glance(rows, providers)]
    return "\n".join(lines + figures(res, providers))


# ---------------------------------------------------------------- CLI


def _commit() -> str:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "src"], capture_output=True, text=True)
    return done.stdout.strip() + (" (src modified)" if dirty.stdout.strip() else "")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run_phases(args: argparse.Namespace, mock: Mock, res: dict[str, Any]) -> None:
    providers, phases = args.providers, args.phases
    names = contestants(providers)
    if "cpu" in phases:
        for k in (1, 4):
            print(f"  cpu K={k} ...", flush=True)
            res[f"cpu_k{k}"] = asyncio.run(cpu_phase(names, mock.url, k, args.reps, args.n))
    if "burst" in phases:
        print(f"  burst of {args.level} ...", flush=True)
        res["burst"] = burst_phase(names, mock, args.level, args.trials)
    if "imports" in phases:
        print("  imports ...", flush=True)
        res["imports"] = import_phase(args.import_reps)
    if "first" in phases:
        print("  first request ...", flush=True)
        res["first"] = first_phase(names, mock.url, args.first_reps)
    if "long" in phases:
        long_names = [f"{p}/{d}" for p in providers for d in ("floor", "run")]
        res["long"] = {}
        for turns in (3, 10, 30):
            print(f"  long history T={turns} ...", flush=True)
            res["long"][str(turns)] = asyncio.run(long_phase(long_names, mock, turns, args.long_reps, args.long_n))


def merged(runs: list[Any]) -> Any:
    """The median of every number over several runs' results (same shape); other values from the first."""
    first = runs[0]
    if isinstance(first, dict):
        return {key: merged([r[key] for r in runs if key in r]) for key in first}
    if isinstance(first, bool) or not isinstance(first, int | float) or all(r == first for r in runs):
        return first
    return statistics.median(runs)


def rereport(files: list[str]) -> None:
    """Print the report of saved runs (``providers-*.json``), the median of each figure when several."""
    saved = [json.loads(Path(f).read_text()) for f in files]
    res = merged([s["results"] for s in saved])
    if len(saved) > 1:
        res["commit"] = ", ".join(dict.fromkeys(s["results"]["commit"] for s in saved))
        res["started"] = min(s["results"]["started"] for s in saved)
        res["finished"] = max(s["results"]["finished"] for s in saved)
    providers = saved[0]["args"]["providers"]
    print(f"medians of {len(saved)} runs: {', '.join(Path(f).name for f in files)}\n")
    print(report(res, providers, "python bench/providers.py --report " + " ".join(Path(f).name for f in files)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--providers", default=",".join(PROVIDERS), help="comma-separated, from: " + ", ".join(PROVIDERS))
    ap.add_argument("--phases", default="cpu,burst,imports,first,long")
    ap.add_argument("--quick", action="store_true", help="few repetitions, for a smoke run")
    ap.add_argument("--reps", type=int, help="cpu: interleaved repetitions (9)")
    ap.add_argument("--n", type=int, help="cpu: conversations per contestant per repetition (20)")
    ap.add_argument("--level", type=int, default=1000, help="burst: concurrent conversations")
    ap.add_argument("--trials", type=int, help="burst: fresh-process trials per contestant (3)")
    ap.add_argument("--import-reps", type=int, help="imports: processes per code (9)")
    ap.add_argument("--first-reps", type=int, help="first: fresh processes per contestant (3)")
    ap.add_argument("--long-reps", type=int, help="long: interleaved repetitions per T (3)")
    ap.add_argument("--long-n", type=int, help="long: conversations per repetition (3)")
    ap.add_argument("--chunked", action="store_true", help="the mock frames SSE as one HTTP chunk per event")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--report", nargs="+", metavar="JSON", help="print saved runs' report (medians of several)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--first-worker", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(asyncio.run(burst_worker(args.worker, args.url, args.level))))
        return
    if args.first_worker:
        print(json.dumps(asyncio.run(first_worker(args.first_worker, args.url))))
        return
    if args.report:
        rereport(args.report)
        return
    q = args.quick
    args.reps = args.reps or (3 if q else 9)
    args.n = args.n or (5 if q else 20)
    args.trials = args.trials or (1 if q else 3)
    args.import_reps = args.import_reps or (3 if q else 9)
    args.first_reps = args.first_reps or (1 if q else 3)
    args.long_reps = args.long_reps or (1 if q else 3)
    args.long_n = args.long_n or (1 if q else 3)
    args.providers = [p for p in args.providers.split(",") if p]
    args.phases = args.phases.split(",")
    unknown = set(args.providers) - set(PROVIDERS)
    if unknown:
        raise SystemExit(f"unknown providers: {', '.join(sorted(unknown))}")
    command = " ".join(["python bench/providers.py", *sys.argv[1:]])
    res: dict[str, Any] = {"level": args.level, "chunked": args.chunked, "commit": _commit(), "load_before": _load()}
    res["started"] = time.strftime("%H:%M", time.gmtime())
    mock = Mock(args.chunked)
    res["pinned"] = mock.pinned
    print(f"mock pid {mock.proc.pid} at {mock.url}; providers: {', '.join(args.providers)}", flush=True)
    try:
        run_phases(args, mock, res)
    finally:
        mock.close()
    res["finished"] = time.strftime("%H:%M", time.gmtime())
    res["load_after"] = _load()
    text = report(res, args.providers, command)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    (out / f"providers-{stamp}.json").write_text(json.dumps({"args": vars(args), "results": res}, indent=1))
    (out / f"providers-{stamp}.md").write_text(text)
    print("\n" + text)
    missed = [row for row in targets(res, args.providers) if not row[-1]]
    sys.exit(1 if args.strict and missed else 0)


if __name__ == "__main__":
    main()
