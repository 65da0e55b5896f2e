"""Running the tool calls of one model response: concurrently, with barriers and timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ..errors import ToolTimeoutError
from .tool import Tool, ToolContext

__all__ = ["invoke", "run_concurrently"]

T = TypeVar("T")


async def run_concurrently(
    items: Sequence[T], run_one: Callable[[T], Awaitable[None]], sequential: Callable[[T], bool]
) -> None:
    """Run ``run_one`` over ``items`` at once, except that a sequential item runs alone.

    A sequential item waits for the items before it and holds back the items after it. If this
    coroutine is cancelled, every item still running is cancelled before the cancellation goes on.
    """
    group: list[T] = []
    for item in items:
        if sequential(item):
            await _together(group, run_one)
            group = []
            await run_one(item)
        else:
            group.append(item)
    await _together(group, run_one)


async def _together(group: Sequence[T], run_one: Callable[[T], Awaitable[None]]) -> None:
    if not group:
        return
    if len(group) == 1:
        await run_one(group[0])
        return
    tasks = [asyncio.ensure_future(run_one(item)) for item in group]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()


async def invoke(tool: Tool, kwargs: dict[str, Any], context: ToolContext, timeout: float | None) -> Any:
    """Call ``tool`` respecting its concurrency cap and ``timeout`` (seconds)."""
    semaphore = tool.semaphore()
    if semaphore is None:
        return await _timed(tool, kwargs, context, timeout)
    async with semaphore:
        return await _timed(tool, kwargs, context, timeout)


async def _timed(tool: Tool, kwargs: dict[str, Any], context: ToolContext, timeout: float | None) -> Any:
    if timeout is None:
        return await tool.call(kwargs, context)
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            return await tool.call(kwargs, context)
    except TimeoutError:
        if scope.expired():
            raise ToolTimeoutError(f"tool {tool.name!r} did not finish within {timeout:g} seconds") from None
        raise
