"""Proxy variables through tinyproxy, and the connection cap under a descriptor limit, on both transports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.transport.servers import Authorities, Nginx, Tinyproxy, Upstream
from tests.transport.test_parity import ask

Make = Callable[..., Any]
ROOT = Path(__file__).resolve().parents[2]


async def test_http_proxy_variable_routes_through_tinyproxy(
    make: Make, tinyproxy: Tinyproxy, upstream: Upstream, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{tinyproxy.port}")
    assert (await ask(make(upstream.url("ok", token)), True)).text == "pong from ok"
    assert "tinyproxy" in upstream.seen[token].headers[0].get("via", "")


async def test_https_proxy_variable_tunnels_to_the_tls_gateway(
    make: Make,
    tinyproxy: Tinyproxy,
    nginx: Nginx,
    authorities: Authorities,
    token: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{tinyproxy.port}")
    monkeypatch.setenv("SSL_CERT_FILE", str(authorities.ca_file))
    before = len(tinyproxy.lines())
    assert (await ask(make(nginx.url("ok", token, tls=True)), False)).text == "pong from ok"
    assert any(f"CONNECT 127.0.0.1:{nginx.tls_port}" in line for line in tinyproxy.lines()[before:])


async def test_no_proxy_sends_requests_directly(
    make: Make, tinyproxy: Tinyproxy, upstream: Upstream, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{tinyproxy.port}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert (await ask(make(upstream.url("ok", token)), False)).text == "pong from ok"
    assert "via" not in upstream.seen[token].headers[0]


_ELIGIBLE = textwrap.dedent(
    """
    import json, sys
    from tooloop.transport.client import lean_eligible
    print(json.dumps([lean_eligible("http://127.0.0.1:9/v1"), "urllib.request" in sys.modules]))
    """
)


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({}, [True, False]),  # no proxy variable: decided without importing urllib.request
        ({"all_proxy": "http://127.0.0.1:3128"}, [False, True]),
        ({"HTTP_PROXY": "http://127.0.0.1:3128", "NO_PROXY": "127.0.0.1"}, [True, True]),
        ({"HTTPS_PROXY": "http://127.0.0.1:3128"}, [True, True]),  # not for http://
        ({"Http_Proxy": "http://127.0.0.1:3128"}, [False, True]),  # any case, as the standard library reads them
    ],
)
def test_lean_eligible_reads_the_proxy_variables(variables: dict[str, str], expected: list[bool]) -> None:
    import json
    import os

    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env |= {"PYTHONPATH": str(ROOT / "src"), **variables}
    out = subprocess.run([sys.executable, "-c", _ELIGIBLE], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == expected


_CONVERSATIONS = textwrap.dedent(
    """
    import asyncio, resource, sys
    limit, count, transport, cap, url = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    from tooloop.messages import UserMessage
    from tooloop.models import ModelRequest, get_model

    async def main():
        options = {} if transport == "default" else {"transport": transport}
        if cap:
            options["max_connections"] = int(cap)
        options.update(base_url=url, api_key="sk-pool-test-key", max_retries=0, timeout=60)
        model = get_model("openai:gpt-4.1-mini", **options)
        request = ModelRequest([UserMessage("hi")])
        results = await asyncio.gather(*(model.respond(request) for _ in range(count)), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        answers = sum(1 for r in results if not isinstance(r, BaseException) and r.text == "pong from delay")
        await model.aclose()
        print(answers, len(failures), repr(failures[:1]))

    asyncio.run(main())
    """
)


def conversations(transport: str, url: str, *, limit: int, count: int, cap: int | None) -> str:
    """Run ``count`` concurrent requests in a process limited to ``limit`` descriptors; its report."""
    done = subprocess.run(
        [sys.executable, "-c", _CONVERSATIONS, str(limit), str(count), transport, str(cap or ""), url],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_connection_cap_queues_conversations_beyond_the_descriptor_limit(
    transport: str, upstream: Upstream, token: str
) -> None:
    report = conversations(transport, upstream.url("delay", token), limit=128, count=250, cap=50)
    assert report == "250 0 []"
    assert len(upstream.seen[token].connections) <= 50


def test_default_transport_never_fails_for_lack_of_descriptors(upstream: Upstream, token: str) -> None:
    # the default cap (1000, as the SDK's) is above the limit: connections wait for a descriptor
    report = conversations("default", upstream.url("delay", token), limit=128, count=250, cap=None)
    assert report == "250 0 []"
