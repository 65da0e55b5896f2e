"""What the tests of cost and caching share: models on the scripted server, closed when the test
ends (``pytestmark = pytest.mark.usefixtures("served_models")``), prices worked out by hand from
the providers' price lists, and a tool for the model to call."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tooloop import tool
from tooloop.models import get_model

M = Decimal(1_000_000)
_OPEN: list[Any] = []


def served_model(spec: str, base_url: str, **options: Any) -> Any:
    """The model ``spec`` on the server at ``base_url``, with a test key and no retries unless ``options`` say."""
    made = get_model(spec, base_url=base_url, **{"api_key": "test-key", "max_retries": 0, **options})
    _OPEN.append(made)
    return made


async def close_served_models() -> None:
    """Close every model :func:`served_model` made (their pools belong to the test's event loop)."""
    while _OPEN:
        await _OPEN.pop().aclose()


def price(*parts: tuple[int, str], **named: tuple[int, str]) -> Decimal:
    """Dollars for ``(tokens, dollars per million)`` pairs, given in order or named for what they count."""
    return sum((Decimal(n) * Decimal(rate) / M for n, rate in (*parts, *named.values())), Decimal(0))


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
