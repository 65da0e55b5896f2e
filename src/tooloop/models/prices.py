"""What a model request cost, in US dollars, from the ``genai-prices`` database.

``genai-prices`` ships its price table inside the package, so prices work offline. It is loaded
the first time a cost is read (a third of a second of CPU and about 17 MB, once per process), not
when a response arrives: a process whose runs nobody asks the cost of never loads it. A model it
does not know costs ``None``. Local servers (Ollama, vLLM, llama.cpp, any ``openai-compatible``
base URL) and the test models have no price: their cost is ``None``.

Tokens are priced as the providers bill them: cached input tokens at the cache-read price, cache
writes at the cache-write price of their time to live (Anthropic's one-hour writes cost more than
five-minute ones), the rest of the input at the input price, and output tokens (reasoning
included) at the output price, or the reasoning price where a model has one. A cost the provider
reported itself (OpenRouter's ``usage.cost``) is kept as it is.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from ..messages import PendingCost, Usage, held_cost, pending_cost

if TYPE_CHECKING:
    from decimal import Decimal

__all__ = ["PRICED_PROVIDERS", "cost_of", "priced"]

PRICED_PROVIDERS = {
    "openai": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "google": "google",
    "gemini": "google",
    "groq": "groq",
    "openrouter": "openrouter",
}
"""tooloop provider name -> ``genai-prices`` provider id."""

_log = logging.getLogger("tooloop.models.prices")
_lock = threading.Lock()
_unknown: set[tuple[str, str]] = set()


def cost_of(usage: Usage, provider: str, model: str | None) -> Decimal | None:
    """What ``usage`` of ``model`` at ``provider`` cost in USD, or None when the price is unknown."""
    provider_id = PRICED_PROVIDERS.get(provider)
    if provider_id is None or not model or (provider_id, model) in _unknown:
        return None
    try:
        return _calculate(usage, provider_id, model)
    except LookupError:
        _log.debug("no price for %s model %r", provider_id, model)
    except Exception as exc:  # a price table that cannot price this usage must not fail the run
        _log.warning("cannot price %s model %r: %r", provider_id, model, exc)
    _unknown.add((provider_id, model))
    return None


def priced(usage: Usage, provider: str, model: str | None) -> Usage:
    """``usage`` with its ``cost`` looked up in the price table when it is first read (unchanged
    when it has a cost, or when the provider or model is known to have no price)."""
    if held_cost(usage) is not None:
        return usage
    provider_id = PRICED_PROVIDERS.get(provider)
    if provider_id is None or not model or (provider_id, model) in _unknown:
        return usage
    return pending_cost(usage, _Price(usage, provider, model))


class _Price(PendingCost):
    """The price of one response's tokens, looked up when its cost is first read."""

    __slots__ = ("model", "provider", "usage")

    def __init__(self, usage: Usage, provider: str, model: str):
        self.settled, self.value = False, None  # PendingCost.__init__, inline: one of these per response
        self.usage, self.provider, self.model = usage, provider, model

    def work_out(self) -> Decimal | None:
        return cost_of(self.usage, self.provider, self.model)


def _calculate(usage: Usage, provider_id: str, model: str) -> Decimal:
    with _lock:  # the first call loads the table; loading it twice at once helps nobody
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price
    counts: dict[str, Any] = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    if usage.cache_read_tokens:
        counts["cache_read_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        counts["cache_write_tokens"] = usage.cache_write_tokens
    if usage.cache_write_1h_tokens:
        counts["cache_write_1h_tokens"] = usage.cache_write_1h_tokens
    if usage.reasoning_tokens:
        counts["output_reasoning_tokens"] = usage.reasoning_tokens
    total: Decimal = calc_price(PriceUsage(**counts), model, provider_id=provider_id).total_price
    return total
