"""Provider-neutral, frozen values: messages, tool calls, model responses, usage, stop reasons.

Nothing here knows about a provider SDK or storage. Provider adapters translate these values to
and from their wire format; stores persist them through :mod:`tooloop.transcript`'s JSON form.
"""

from __future__ import annotations

import enum
import math
import sys
from abc import abstractmethod
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NoReturn, SupportsIndex, TypeAlias

from ._frozen import FACTORY, become, draft_of, new_draft, thawed

if TYPE_CHECKING:  # costs are Decimals, made where prices are worked out: a run that reads none needs no decimal
    from decimal import Decimal

__all__ = [
    "EMPTY",
    "AssistantMessage",
    "AudioContent",
    "ContentPart",
    "DocumentContent",
    "EmbeddedResource",
    "FrozenDict",
    "FrozenList",
    "ImageContent",
    "Message",
    "ModelResponse",
    "Prompt",
    "ResourceLink",
    "StopReason",
    "SystemMessage",
    "TextContent",
    "ThinkingPart",
    "Tokens",
    "ToolCall",
    "ToolCallMessage",
    "ToolCallStatus",
    "ToolOutput",
    "Usage",
    "UserMessage",
    "UserPart",
]


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise TypeError("a recorded value cannot change; work on a copy, e.g. dict(arguments) or list(items)")


class FrozenDict(dict[str, Any]):
    """A dict that cannot change, and hashes when its values do: how messages keep mappings.

    It compares equal to a plain dict with the same items and serialises like one; ``dict(d)``
    gives a mutable copy.
    """

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def __setitem__(self, key: str, value: Any) -> NoReturn:
        _refuse()

    def __delitem__(self, key: str) -> NoReturn:
        _refuse()

    def __ior__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _refuse()

    def setdefault(self, *args: Any) -> NoReturn:
        _refuse()

    def update(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse()

    def pop(self, *args: Any) -> NoReturn:
        _refuse()

    def popitem(self) -> NoReturn:
        _refuse()

    def clear(self) -> NoReturn:
        _refuse()


class FrozenList(list[Any]):
    """A list that cannot change, and hashes when its items do; equal to a list with the same items."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        _refuse()

    def __delitem__(self, index: SupportsIndex | slice) -> NoReturn:
        _refuse()

    def __iadd__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _refuse()

    def __imul__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _refuse()

    def append(self, item: Any) -> NoReturn:
        _refuse()

    def extend(self, items: Any) -> NoReturn:
        _refuse()

    def insert(self, index: Any, item: Any) -> NoReturn:
        _refuse()

    def pop(self, index: Any = -1) -> NoReturn:
        _refuse()

    def remove(self, item: Any) -> NoReturn:
        _refuse()

    def clear(self) -> NoReturn:
        _refuse()

    def sort(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse()

    def reverse(self) -> NoReturn:
        _refuse()


EMPTY = FrozenDict()
"""The empty :class:`FrozenDict`, shared."""

_SCALARS = frozenset({str, int, float, bool, type(None)})


def freeze(value: Any) -> Any:
    """``value`` with every plain dict, list and set in it (deeply) made immutable; other values as they are."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return frozen_mapping(value)
    if kind is list:
        return FrozenList([item if type(item) in _SCALARS else freeze(item) for item in value])
    if kind is tuple:
        return tuple(freeze(item) for item in value)
    if kind is set:
        return frozenset(value)
    return value


def frozen_mapping(value: Mapping[str, Any]) -> FrozenDict:
    """``value`` as a deeply immutable :class:`FrozenDict` (itself when it already is one)."""
    if type(value) is FrozenDict:
        return value
    if not value:
        return EMPTY
    for item in value.values():
        if type(item) not in _SCALARS:  # nested containers: frozen too
            return FrozenDict({key: item if type(item) in _SCALARS else freeze(item) for key, item in value.items()})
    return FrozenDict(value)  # flat (the usual tool arguments): one copy


def thaw(value: Any) -> Any:
    """A mutable deep copy of a value :func:`freeze` made (plain dicts and lists again)."""
    if isinstance(value, dict):
        return {key: item if type(item) in _SCALARS else thaw(item) for key, item in value.items()}
    if isinstance(value, list):
        return [item if type(item) in _SCALARS else thaw(item) for item in value]
    return value


class StopReason(enum.StrEnum):
    """Why a model response or a whole run ended.

    The first five are the Agent Client Protocol's stop reasons, with the same string values.
    The rest say more precisely why tooloop stopped; :attr:`acp` maps every value to the closest
    ACP value for editors.
    """

    END_TURN = "end_turn"
    """The model answered without asking for tools (or a hook ended the run)."""
    MAX_TOKENS = "max_tokens"
    """The model hit its output limit, or the run's token budget was used up."""
    MAX_TURN_REQUESTS = "max_turn_requests"
    """``Limits.max_turns`` model requests were made."""
    REFUSAL = "refusal"
    """The model refused to answer."""
    CANCELLED = "cancelled"
    """The run was cancelled."""
    TOOL_USE = "tool_use"
    """A model response that asks for tool calls (never the stop reason of a finished run)."""
    APPROVAL_REQUIRED = "approval_required"
    """The run stopped because tool calls wait for a person's decision."""
    TOKEN_BUDGET = "token_budget"
    """``Limits.max_total_tokens`` was reached."""
    COST_LIMIT = "cost_limit"
    """The next request would take the run's cost over ``Limits.max_cost``."""
    STOPPED_BY_HOOK = "stopped_by_hook"
    """A hook returned ``LoopControl.stop()`` without a more specific reason."""
    PAUSE_TURN = "pause_turn"
    """The provider paused a long turn; the loop sends the conversation back to continue it."""
    ERROR = "error"
    """The run failed; ``RunResult.error`` holds the exception (with ``raise_errors=False``)."""
    REPEATED_CALL = "repeated_call"
    """The model asked for a call it had already made ``Limits.max_repeats`` times (not run)."""
    REPEATED_ERROR = "repeated_error"
    """The same tool error came back ``Limits.max_repeated_errors`` times in a row."""
    EMPTY_RESPONSE = "empty_response"
    """More than ``Limits.max_empty_responses`` answers in a row had no text and no tool call."""

    @property
    def acp(self) -> str:
        """The closest Agent Client Protocol stop reason."""
        return _ACP.get(self, "end_turn")


_ACP = {
    StopReason.END_TURN: "end_turn",
    StopReason.MAX_TOKENS: "max_tokens",
    StopReason.MAX_TURN_REQUESTS: "max_turn_requests",
    StopReason.REFUSAL: "refusal",
    StopReason.CANCELLED: "cancelled",
    StopReason.TOKEN_BUDGET: "max_tokens",
    StopReason.COST_LIMIT: "max_tokens",
    StopReason.REPEATED_CALL: "max_turn_requests",
    StopReason.REPEATED_ERROR: "max_turn_requests",
    StopReason.EMPTY_RESPONSE: "end_turn",
}


@dataclass(frozen=True, slots=True, init=False)
class Usage:
    """Tokens, counts and cost, summed over requests with ``+``.

    Every provider's counts are read into one meaning: ``input_tokens`` includes cached input
    (``cache_read_tokens``, ``cache_write_tokens``, of which ``cache_write_1h_tokens`` were written
    for an hour) and ``output_tokens`` includes reasoning (``reasoning_tokens``). ``cost`` is in US
    dollars, None when the price is unknown (never zero for an unknown price); a sum is None as
    soon as one of its requests has no price, and ``estimated`` as soon as one of its parts is.

    A cost from a price table is looked up when ``cost`` is first read (then kept), not when the
    response arrives: a process whose runs nobody asks the cost of never loads the table. Reading
    it, comparing, hashing, pickling or ``dataclasses.replace`` see the same ``Decimal | None``.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    tool_calls: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost: Decimal | None = None
    estimated: bool = False
    """True when some of the tokens are an estimate: a model that reported no usage is counted by
    the context counter (when a token budget, ``Limits.max_total_tokens``, needs a count)."""
    cache_write_1h_tokens: int = 0
    """Of ``cache_write_tokens``, those written to a one-hour cache (priced higher than five minutes)."""

    def __init__(
        self,
        input_tokens: int = 0,
        output_tokens: int = 0,
        requests: int = 0,
        tool_calls: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost: Decimal | None = None,
        estimated: bool = False,
        cache_write_1h_tokens: int = 0,
    ) -> None:
        # written out (a run makes several per request): the fields filled through a draft, see tooloop._frozen
        cls = type(self)
        draft: Any
        if cls is Usage:  # thawed(), inline
            become(self, "__class__", _UsageDraft)
            draft = self
        else:
            draft = thawed(self, _UsageDraft)
        draft.input_tokens = input_tokens
        draft.output_tokens = output_tokens
        draft.requests = requests
        draft.tool_calls = tool_calls
        draft.cache_read_tokens = cache_read_tokens
        draft.cache_write_tokens = cache_write_tokens
        draft.reasoning_tokens = reasoning_tokens
        draft.cost = cost
        draft.estimated = estimated
        draft.cache_write_1h_tokens = cache_write_1h_tokens
        draft.__class__ = cls

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return _usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.requests + other.requests,
            self.tool_calls + other.tool_calls,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            _add_cost(_raw_cost(self), self.requests, _raw_cost(other), other.requests),
            self.estimated or other.estimated,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )


_UsageDraft = draft_of(Usage)


def _usage(
    input_tokens: int,
    output_tokens: int,
    requests: int,
    tool_calls: int,
    cache_read_tokens: int,
    cache_write_tokens: int,
    reasoning_tokens: int,
    cost: Any,
    estimated: bool,
    cache_write_1h_tokens: int,
) -> Usage:
    """``Usage(...)`` with every field given, without the constructor's call (a sum per request)."""
    draft = new_draft(_UsageDraft)
    draft.input_tokens = input_tokens
    draft.output_tokens = output_tokens
    draft.requests = requests
    draft.tool_calls = tool_calls
    draft.cache_read_tokens = cache_read_tokens
    draft.cache_write_tokens = cache_write_tokens
    draft.reasoning_tokens = reasoning_tokens
    draft.cost = cost
    draft.estimated = estimated
    draft.cache_write_1h_tokens = cache_write_1h_tokens
    draft.__class__ = Usage
    usage: Usage = draft
    return usage


class PendingCost:
    """A cost worked out when it is first needed: what a :class:`Usage` holds until its ``cost``
    is read. Subclasses say how (:meth:`work_out`) and what must be known first (:meth:`parts`);
    the answer is worked out once and kept."""

    __slots__ = ("settled", "value")

    def __init__(self) -> None:
        self.settled = False
        self.value: Decimal | None = None

    def parts(self) -> tuple[Decimal | PendingCost | None, ...]:
        """The costs this one is made of (settled before :meth:`work_out` is called)."""
        return ()

    @abstractmethod  # checked by the type checker; no ABCMeta, whose isinstance is slow on this path
    def work_out(self) -> Decimal | None:
        """The cost, in US dollars, or None when the price is unknown."""

    def settle(self) -> Decimal | None:
        """The cost, worked out now if it was not (parts first, without recursion: a long run's
        total is a chain of sums as long as its requests)."""
        stack: list[PendingCost] = [self]
        while stack:
            pending = stack[-1]
            if pending.settled:
                stack.pop()
                continue
            waiting = [p for p in pending.parts() if isinstance(p, PendingCost) and not p.settled]
            if waiting:
                stack.extend(waiting)
                continue
            pending.value, pending.settled = pending.work_out(), True
            stack.pop()
        return self.value


class _CostSum(PendingCost):
    """The cost of a sum of usages at least one of which is still pending."""

    __slots__ = ("a", "a_requests", "b", "b_requests")

    def __init__(self, a: Decimal | PendingCost, a_requests: int, b: Decimal | PendingCost, b_requests: int):
        self.settled, self.value = False, None  # PendingCost.__init__, inline: one of these per request
        self.a, self.a_requests, self.b, self.b_requests = a, a_requests, b, b_requests

    def parts(self) -> tuple[Decimal | PendingCost | None, ...]:
        return (self.a, self.b)

    def work_out(self) -> Decimal | None:
        return _sum_costs(_settled(self.a), self.a_requests, _settled(self.b), self.b_requests)


def _settled(cost: Decimal | PendingCost | None) -> Decimal | None:
    return cost.value if isinstance(cost, PendingCost) else cost


_cost_slot: Any = Usage.__dict__["cost"]
_raw_cost: Any = _cost_slot.__get__
_set_cost: Any = _cost_slot.__set__


def _read_cost(usage: Usage) -> Decimal | None:
    """``Usage.cost``: a :class:`PendingCost` in the slot is settled on the first read and
    replaced by its value (the slot holds ``Decimal | None`` from then on)."""
    cost = _raw_cost(usage)
    if isinstance(cost, PendingCost):
        cost = cost.settle()
        _set_cost(usage, cost)
    return cost  # type: ignore[no-any-return]


# Over the dataclass's slot: reads go through _read_cost, writes (the dataclass's __init__, pickling)
# straight to the slot in C. The field keeps its declared type for readers (mypy, dataclasses).
_usage_class: Any = Usage
_usage_class.cost = property(_read_cost, _set_cost, doc="US dollars, or None when the price is unknown.")


def held_cost(usage: Usage) -> Decimal | PendingCost | None:
    """``usage``'s cost as held, without working it out: a ``Decimal``, None, or a :class:`PendingCost`."""
    return _raw_cost(usage)  # type: ignore[no-any-return]


def pending_cost(usage: Usage, cost: Decimal | PendingCost | None) -> Usage:
    """``usage`` with ``cost`` (a :class:`PendingCost` is worked out when the cost is first read)."""
    return _usage(  # the field's setter takes a PendingCost too (once per priced response: no call between)
        usage.input_tokens,
        usage.output_tokens,
        usage.requests,
        usage.tool_calls,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
        cost,
        usage.estimated,
        usage.cache_write_1h_tokens,
    )


def recounted(usage: Usage, requests: int, tool_calls: int) -> Usage:
    """``usage`` with other request and call counts, its cost carried over unread."""
    return _usage(
        usage.input_tokens,
        usage.output_tokens,
        requests,
        tool_calls,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
        _raw_cost(usage),
        usage.estimated,
        usage.cache_write_1h_tokens,
    )


def _add_cost(x: Any, a_requests: int, y: Any, b_requests: int) -> Any:
    """The cost of a sum of usages costing ``x`` (over ``a_requests`` requests) and ``y`` (held costs:
    a :class:`PendingCost` while one is): a side without requests adds nothing; a request without
    a price makes it unknown."""
    if x is None and y is None:  # no price on either side (what _sum_costs would say)
        return None
    if isinstance(x, PendingCost) and x.settled:
        x = x.value
    if isinstance(y, PendingCost) and y.settled:
        y = y.value
    if not isinstance(x, PendingCost) and not isinstance(y, PendingCost):
        return _sum_costs(x, a_requests, y, b_requests)
    if y is None:  # known without working out the other side
        return None if b_requests else x
    if x is None:
        return None if a_requests else y
    return _CostSum(x, a_requests, y, b_requests)


def summed(first: Usage, more: Iterable[Usage], calls: int = 0) -> Usage:
    """``first`` plus each of ``more`` in turn (the same value as ``+``), with one :class:`Usage` made;
    ``calls`` more tool calls counted too."""
    input_tokens, output_tokens = first.input_tokens, first.output_tokens
    requests, tool_calls = first.requests, first.tool_calls + calls
    cache_read, cache_write = first.cache_read_tokens, first.cache_write_tokens
    reasoning, cache_1h, estimated = first.reasoning_tokens, first.cache_write_1h_tokens, first.estimated
    cost = _raw_cost(first)
    for usage in more:
        input_tokens += usage.input_tokens
        output_tokens += usage.output_tokens
        tool_calls += usage.tool_calls
        cache_read += usage.cache_read_tokens
        cache_write += usage.cache_write_tokens
        reasoning += usage.reasoning_tokens
        cache_1h += usage.cache_write_1h_tokens
        estimated = estimated or usage.estimated
        other = _raw_cost(usage)
        if cost is not None or other is not None:
            cost = _add_cost(cost, requests, other, usage.requests)
        requests += usage.requests
    return _usage(
        input_tokens, output_tokens, requests, tool_calls, cache_read, cache_write, reasoning, cost, estimated, cache_1h
    )


def _sum_costs(a: Decimal | None, a_requests: int, b: Decimal | None, b_requests: int) -> Decimal | None:
    if a is not None and b is not None:
        return a + b
    if a is None and not a_requests:
        return b
    if b is None and not b_requests:
        return a
    return None


@dataclass(frozen=True, slots=True, eq=False)
class Tokens:
    """The exact tokens of one model response, as the inference server reported them.

    ``prompt`` holds the prompt's token ids and ``completion`` the sampled ones (32-bit ints,
    native byte order); ``logprobs`` one 32-bit float per completion token, NaN where the server
    gave none, or nothing at all when it gave no logprobs. Bytes, not a Python object per token:
    a rollout holds tens of thousands. Read them with :attr:`prompt_ids`, :attr:`completion_ids`
    and :attr:`completion_logprobs`; build one with :meth:`of`.

    In memory the ids take the fewest bytes per id that their largest one needs (three for a
    vocabulary of up to 16.7 million tokens, two up to 65,536): ``prompt`` and ``completion``
    put them back as 32-bit ints on each read (a copy), so read them once where it matters.

    32-bit floats hold the logprobs vLLM and SGLang send exactly (they compute them in 32-bit
    floats); a 64-bit value from elsewhere is rounded to the nearest 32-bit one (a relative error
    below 6e-8). ``logprobs`` given as 64-bit floats (8 bytes per completion id, as tokens stored
    before they were kept as 32-bit floats) are converted to 32-bit ones on construction.

    ``extends``, when set, is the previous response's tokens, which this prompt continues: then
    ``prompt`` holds only the ids after ``extends``' whole prompt and completion (a conversation
    keeps each turn's new tokens once, not its whole prompt again), and :attr:`whole_prompt`
    gives all of them. Values compare by their whole prompt, whatever their form.

    ``problem`` says why the tokens cannot be trusted (ids of the wrong length, none sent for a
    request that asked for them); :class:`tooloop.rollouts.Trajectory` never trains on them then.
    An empty ``prompt`` means the server sent no prompt ids. ``fallback`` says why a request
    meant to go as tokens (``token_in=True``) went as messages instead.
    """

    prompt: bytes = b""
    completion: bytes = b""
    logprobs: bytes = b""
    problem: str | None = None
    fallback: str | None = None
    extends: Tokens | None = None

    def __init__(
        self,
        prompt: bytes = b"",
        completion: bytes = b"",
        logprobs: bytes = b"",
        problem: str | None = None,
        fallback: str | None = None,
        extends: Tokens | None = None,
    ) -> None:
        # Written out (the dataclass's signature): fields set through a draft (tooloop._frozen),
        # not object.__setattr__ per field; tokens are made several times per captured answer.
        cls = type(self)
        if logprobs and len(logprobs) == 2 * len(completion):
            logprobs = _narrowed(logprobs)
        draft = thawed(self, _TokensDraft)
        draft.prompt = prompt
        draft.completion = completion
        draft.logprobs = logprobs
        draft.problem = problem
        draft.fallback = fallback
        draft.extends = extends
        draft.__class__ = cls

    @classmethod
    def of(
        cls,
        prompt_ids: Iterable[int] = (),
        completion_ids: Iterable[int] = (),
        logprobs: Iterable[float | None] | None = None,
        problem: str | None = None,
    ) -> Tokens:
        """Tokens from plain sequences; ``logprobs`` must have one item per completion id.

        Raises ``ValueError`` for an id that is not an int in range or a logprob that is not a
        number, and when ``logprobs`` has another length than ``completion_ids``.
        """
        prompt = ids_bytes(prompt_ids, "prompt")
        completion = ids_bytes(completion_ids, "completion")
        packed = b""
        if logprobs is not None:
            values = _floats(logprobs)
            if len(values) != len(completion) // _INT_SIZE:
                raise ValueError(f"{len(values)} logprobs for {len(completion) // _INT_SIZE} completion ids")
            if any(not math.isnan(v) for v in values):
                packed = values.tobytes()
        return cls(prompt, completion, packed, problem)

    @property
    def whole_prompt(self) -> bytes:
        """All the prompt's ids as bytes (``prompt`` with what it ``extends`` in front)."""
        pieces = [_held_prompt(self)]
        tokens = self
        while tokens.extends is not None:
            tokens = tokens.extends
            pieces += (_held_completion(tokens), _held_prompt(tokens))
        if len(pieces) == 1:
            return _widened(pieces[0])
        pieces.reverse()
        return b"".join([_widened(piece) for piece in pieces])

    @property
    def prompt_length(self) -> int:
        """How many ids the whole prompt has."""
        size = _count(_held_prompt(self))
        tokens = self
        while tokens.extends is not None:
            tokens = tokens.extends
            size += _count(_held_completion(tokens)) + _count(_held_prompt(tokens))
        return size

    @property
    def completion_length(self) -> int:
        """How many ids were sampled."""
        return _count(_held_completion(self))

    def continuing(self, previous: Tokens | None) -> Tokens:
        """These tokens kept as the ids after ``previous``' prompt and completion when the prompt
        continues them exactly (see ``extends``); unchanged when it does not or either is unusable."""
        if previous is None or self.extends is not None or not (self.ok and previous.ok):
            return self
        prompt, completion = self.prompt, previous.completion
        head_size = previous.prompt_length * _INT_SIZE + len(completion)
        if len(prompt) < head_size or not prompt.endswith(completion, 0, head_size):
            return self
        if not prompt.startswith(previous.whole_prompt):
            return self
        return self.after(prompt[head_size:], previous)

    def after(self, rest: bytes, extends: Tokens) -> Tokens:
        """These tokens with their prompt kept as ``rest`` (32-bit ids) after ``extends``' prompt
        and completion; the caller has checked that the whole prompt stays the same."""
        draft = new_draft(_TokensDraft)
        _set_prompt(draft, _narrow_ids(rest))
        _set_completion(draft, _settled_ids(_held_completion(self)))
        draft.logprobs, draft.problem, draft.fallback, draft.extends = (
            self.logprobs,
            self.problem,
            self.fallback,
            extends,
        )
        draft.__class__ = type(self)
        return draft  # type: ignore[no-any-return]

    @property
    def prompt_ids(self) -> array[int]:
        """The prompt's token ids, all of them (a copy)."""
        return _unpack("i", self.whole_prompt)

    @property
    def completion_ids(self) -> array[int]:
        """The sampled token ids (a copy)."""
        return _unpack("i", self.completion)

    @property
    def completion_logprobs(self) -> list[float | None]:
        """One log-probability per completion token, None where the server gave none."""
        if not self.logprobs:
            return [None] * self.completion_length
        return [None if v != v else v for v in _unpack("f", self.logprobs)]

    @property
    def ok(self) -> bool:
        """True when prompt and completion ids are there and nothing is wrong with them."""
        return self.problem is None and bool(_held_prompt(self) or self.extends) and bool(_held_completion(self))

    def _key(self) -> tuple[bytes, bytes, bytes, str | None, str | None]:
        return (self.whole_prompt, self.completion, self.logprobs, self.problem, self.fallback)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokens):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        count = self.completion_length
        problem = f", problem={self.problem!r}" if self.problem is not None else ""
        return f"Tokens(prompt={self.prompt_length} ids, completion={count} ids{problem})"


_TokensDraft = draft_of(Tokens)

# Over the dataclass's slots (as Usage.cost): ``prompt`` and ``completion`` read and take 32-bit
# ids, and the slots hold them narrowed (_narrow_ids). The constructor, dataclasses.replace() and
# unpickling all set them through the setters; the fields keep their declared type for readers.
_prompt_slot: Any = Tokens.__dict__["prompt"]
_completion_slot: Any = Tokens.__dict__["completion"]
_held_prompt: Any = _prompt_slot.__get__
_held_completion: Any = _completion_slot.__get__
_set_prompt: Any = _prompt_slot.__set__
_set_completion: Any = _completion_slot.__set__


def _widened(held: bytes) -> bytes:
    """Ids as :func:`_narrow_ids` keeps them, as 32-bit ints (native order) again."""
    if not held:
        return b""
    width = held[0]
    if width == 4:
        return held[1:]
    count = (len(held) - 1) // width
    out = bytearray(4 * count)
    view = memoryview(held)
    for plane in range(width):
        out[_PLANES[plane]] = view[1 + plane * count : 1 + (plane + 1) * count]
    return bytes(out)


def _narrow_ids(data: bytes) -> bytes:
    """32-bit ids (native order) in the fewest bytes per id their largest one needs: empty for
    none, else the width (1 to 4) in one byte, then the ids' lowest bytes, their next bytes, and
    so on, one run each (4: the ids as they are). Slicing in C; no object per id."""
    if not data:
        return b""
    zeros = bytes(len(data) // 4)  # compared with a plane in one memcmp (count(0) reads byte by byte)
    if data[_PLANES[3]] != zeros:
        return b"\x04" + data
    low, middle, high = data[_PLANES[0]], data[_PLANES[1]], data[_PLANES[2]]
    if high != zeros:
        return b"\x03" + low + middle + high
    if middle != zeros:
        return b"\x02" + low + middle
    return b"\x01" + low


def _settled_ids(held: bytes) -> bytes:
    """Ids held as read (:func:`as_read`: width 4) narrowed as far as they go; others unchanged."""
    return _narrow_ids(held[1:]) if held[:1] == b"\x04" else held


def as_read(prompt: bytes, completion: bytes, logprobs: bytes, problem: str | None) -> Tokens:
    """Tokens of a reader (an adapter) that holds the ids (32-bit ints) as they came, a copy
    without looking at each id, because it keeps them after the previous response's or a shared
    start right away (:meth:`Tokens.continuing`, :meth:`Tokens.after`) and then through
    :func:`settled`: only the ids kept are narrowed. ``logprobs`` are 32-bit floats already."""
    draft = new_draft(_TokensDraft)
    _set_prompt(draft, b"\x04" + prompt if prompt else b"")
    _set_completion(draft, b"\x04" + completion if completion else b"")
    draft.logprobs, draft.problem, draft.fallback, draft.extends = logprobs, problem, None, None
    draft.__class__ = Tokens
    return draft  # type: ignore[no-any-return]


def settled(tokens: Tokens) -> Tokens:
    """``tokens`` with ids still held as read (:func:`as_read`) narrowed; the same value otherwise."""
    prompt, completion = _held_prompt(tokens), _held_completion(tokens)
    if prompt[:1] != b"\x04" and completion[:1] != b"\x04":
        return tokens
    draft = new_draft(_TokensDraft)
    _set_prompt(draft, _settled_ids(prompt))
    _set_completion(draft, _settled_ids(completion))
    draft.logprobs, draft.problem, draft.fallback, draft.extends = (
        tokens.logprobs,
        tokens.problem,
        tokens.fallback,
        tokens.extends,
    )
    draft.__class__ = type(tokens)
    return draft  # type: ignore[no-any-return]


def _count(held: bytes) -> int:
    """How many ids :func:`_narrow_ids` kept in ``held``."""
    return (len(held) - 1) // held[0] if held else 0


_PLANES = tuple(slice(k if sys.byteorder == "little" else 3 - k, None, 4) for k in range(4))
"""Where each 32-bit int's lowest byte, next byte, ... are in native order."""

_tokens_class: Any = Tokens
_tokens_class.prompt = property(
    lambda tokens: _widened(_held_prompt(tokens)),
    lambda tokens, ids: _set_prompt(tokens, _narrow_ids(ids)),
    doc="The prompt's ids after what it ``extends`` (all of them when it extends nothing), 32-bit ints.",
)
_tokens_class.completion = property(
    lambda tokens: _widened(_held_completion(tokens)),
    lambda tokens, ids: _set_completion(tokens, _narrow_ids(ids)),
    doc="The sampled ids, 32-bit ints.",
)

_INT_SIZE = array("i").itemsize
if _INT_SIZE != 4:  # pragma: no cover - every platform CPython supports today
    raise ImportError("tooloop needs a 32-bit C int for token ids")


def ids_bytes(values: Iterable[int], what: str) -> bytes:
    """``values`` as :class:`Tokens` keeps ids (32-bit ints, native order); ``ValueError`` for
    anything but ints from 0 to 2**31-1 (``what`` names them in the message)."""
    try:
        # Unsigned: a negative id is refused on the way in, and "I" converts each int directly
        # where "i" parses a format per item (three times the instructions).
        ids = values if isinstance(values, array) and values.typecode in "iI" else array("I", values)
    except (OverflowError, TypeError) as exc:
        raise ValueError(f"{what} token ids must be ints from 0 to 2**31-1: {exc}") from None
    data = ids.tobytes()
    if _high_bit(data):
        bad = next(v for v in ids if not 0 <= v < 2**31)
        raise ValueError(f"{what} token ids must be ints from 0 to 2**31-1, got {bad}")
    return data


_TOP = slice(3, None, 4) if sys.byteorder == "little" else slice(0, None, 4)
"""Where each 32-bit int's top byte is: the last of its four, or the first."""
_LOW_TOP_BYTES = bytes(range(128))


def _high_bit(data: bytes) -> bool:
    """True when some 32-bit int in ``data`` has its top bit set (negative as a signed int, or
    2**31 and more as an unsigned one), checked without an object per id."""
    return bool(data[_TOP].translate(None, _LOW_TOP_BYTES))


def _floats(values: Iterable[float | None]) -> array[float]:
    out = array("f")
    for value in values:
        if value is None:
            out.append(math.nan)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out.append(float(value))
        else:
            raise ValueError(f"a logprob must be a number or None, got {value!r}")
    return out


def _narrowed(data: bytes) -> bytes:
    """64-bit floats (native order) as 32-bit ones."""
    return array("f", _unpack("d", data)).tobytes()


def _unpack(typecode: str, data: bytes) -> array[Any]:
    values = array(typecode)
    values.frombytes(data)
    return values


def little_endian(data: bytes, typecode: str) -> bytes:
    """``data`` (values of ``typecode`` in native order) in little-endian order, for storage."""
    if sys.byteorder == "little" or not data:
        return data
    values = _unpack(typecode, data)
    values.byteswap()
    return values.tobytes()


native_order = little_endian
"""The inverse of :func:`little_endian` (swapping twice is the identity)."""


@dataclass(frozen=True, slots=True)
class ThinkingPart:
    """Model reasoning shown to the caller.

    ``signature`` (Anthropic) or an opaque ``provider_data`` payload lets the same provider verify
    the thinking when it is sent back; another provider never receives a signature it did not make.
    """

    text: str
    signature: str | None = None
    redacted: bool = False
    provider: str | None = None


class ToolCallStatus(enum.StrEnum):
    """The outcome of one tool call."""

    OK = "ok"
    ERROR = "error"
    DENIED = "denied"
    CANCELLED = "cancelled"
    PENDING = "pending"
    """Waiting for an approval decision; the call has not run."""
    STARTED = "started"
    """Issued by the model and not finished: only seen in a journal after a crash."""

    @property
    def finished(self) -> bool:
        """True when the call has an outcome the model can be told."""
        return self not in (ToolCallStatus.PENDING, ToolCallStatus.STARTED)


@dataclass(frozen=True, slots=True)
class TextContent:
    """Text a tool returned."""

    text: str
    kind: ClassVar[Literal["text"]] = "text"


@dataclass(frozen=True, slots=True)
class ImageContent:
    """An image a tool returned: base64 ``data`` of type ``mime_type`` (``"image/png"``)."""

    data: str
    mime_type: str
    kind: ClassVar[Literal["image"]] = "image"


@dataclass(frozen=True, slots=True)
class AudioContent:
    """Audio a tool returned: base64 ``data`` of type ``mime_type`` (``"audio/wav"``)."""

    data: str
    mime_type: str
    kind: ClassVar[Literal["audio"]] = "audio"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceLink:
    """A reference to a resource (a file, a page) the tool pointed at without including it."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    kind: ClassVar[Literal["resource_link"]] = "resource_link"


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddedResource:
    """A resource included in the result: its ``text``, or base64 ``blob`` for binary content."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    kind: ClassVar[Literal["resource"]] = "resource"


@dataclass(frozen=True, slots=True)
class DocumentContent:
    """A document in a user message: base64 ``data`` of type ``mime_type`` (``"application/pdf"``),
    with the file ``name`` when it has one (providers show it to the model)."""

    data: str
    mime_type: str
    name: str | None = None
    kind: ClassVar[Literal["document"]] = "document"


ContentPart: TypeAlias = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
"""One piece of a tool's outcome beyond plain text (MCP's content types)."""

UserPart: TypeAlias = TextContent | ImageContent | AudioContent | DocumentContent
"""One piece of a user message: text, an image, audio or a document."""

Prompt: TypeAlias = str | Sequence[str | UserPart]
"""What ``Agent.run()`` takes as the user's message: a text, or texts and content parts in order."""

_USER_PART_TYPES = (TextContent, ImageContent, AudioContent, DocumentContent)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutput:
    """What a tool returns to give the model more than one text: content parts and/or a JSON value.

    ``parts`` are kept on the :class:`ToolCallMessage` so adapters can send images natively where the
    provider accepts them; ``structured`` becomes the message's ``result``. The text the model is
    told is the parts' text form (:func:`tooloop.outcome.render_output`), or ``structured`` as JSON
    when there are no parts.
    """

    parts: tuple[ContentPart, ...] = ()
    structured: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.parts, tuple):
            object.__setattr__(self, "parts", tuple(self.parts))


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """Instructions for the model."""

    text: str
    kind: ClassVar[Literal["system"]] = "system"

    @property
    def role(self) -> Literal["system"]:
        """Who speaks: ``"system"``."""
        return "system"


@dataclass(frozen=True, slots=True)
class UserMessage:
    """What the user said: a text, or content ``parts`` (text, images, audio, documents) in order.

    With ``parts``, ``text`` is their text parts joined by blank lines (``""`` when there is none),
    so code that reads only text keeps working; give either the text or the parts.

    ``turn_id`` names the turn this prompt opened when the caller gave one
    (``run(prompt, session_id=..., turn_id=...)``): a prompt whose turn id is already in the session
    is not written again, so submitting a turn twice is safe. Providers never see it.
    """

    text: str = ""
    turn_id: str | None = None
    _: KW_ONLY
    parts: tuple[UserPart, ...] = ()
    kind: ClassVar[Literal["user"]] = "user"

    def __post_init__(self) -> None:
        if not self.parts:
            return
        if not isinstance(self.parts, tuple):
            object.__setattr__(self, "parts", tuple(self.parts))
        for part in self.parts:
            if not isinstance(part, _USER_PART_TYPES):
                raise TypeError(
                    f"a user message part must be TextContent, ImageContent, AudioContent or DocumentContent, "
                    f"not {type(part).__name__}"
                )
        text = "\n\n".join(part.text for part in self.parts if isinstance(part, TextContent))
        if self.text and self.text != text:
            raise ValueError("give a user message's text or its parts, not both (put the text in a TextContent part)")
        object.__setattr__(self, "text", text)

    @classmethod
    def of(cls, prompt: str | tuple[UserPart, ...], turn_id: str | None = None) -> UserMessage:
        """The message of a checked prompt: its text, or its parts."""
        return cls(prompt, turn_id) if isinstance(prompt, str) else cls(turn_id=turn_id, parts=prompt)

    @property
    def attachments(self) -> tuple[ImageContent | AudioContent | DocumentContent, ...]:
        """The parts that are not text (images, audio, documents), in order."""
        return tuple(part for part in self.parts if not isinstance(part, TextContent))

    @property
    def role(self) -> Literal["user"]:
        """Who speaks: ``"user"``."""
        return "user"


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """A model answer without tool calls (text, and optionally thinking or a refusal).

    A response that asks for tools is recorded as :class:`ToolCallMessage` values instead, one per
    call, sharing a ``batch_id``.

    ``response_id`` is the provider's id of the response, ``stop_sequence`` the stop sequence that
    ended it (where the provider says which), and ``usage`` that one request's tokens and cost
    (``requests`` is 1); the loop sets them on every answer it records. ``usage`` and
    ``response_id`` describe the request, not the message: equality ignores them.
    """

    text: str = ""
    _: KW_ONLY
    thinking: tuple[ThinkingPart, ...] = ()
    refusal: str | None = None
    stop_reason: StopReason = StopReason.END_TURN
    model: str | None = None
    provider_data: Mapping[str, Any] = EMPTY
    response_id: str | None = field(default=None, compare=False)
    stop_sequence: str | None = None
    usage: Usage | None = field(default=None, compare=False)
    tokens: Tokens | None = field(default=None, repr=False)
    """The response's exact tokens, when the model was asked to capture them."""
    kind: ClassVar[Literal["assistant"]] = "assistant"

    @property
    def role(self) -> Literal["assistant"]:
        """Who speaks: ``"assistant"``."""
        return "assistant"

    def __post_init__(self) -> None:
        if type(self.provider_data) is not FrozenDict:
            object.__setattr__(self, "provider_data", frozen_mapping(self.provider_data))


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallMessage:
    """One tool call together with its outcome.

    ``message`` is the assistant text that came with the call. Calls from one model response share
    ``batch_id`` and sit next to each other in a transcript, so an adapter can send them back as
    one assistant turn followed by its results. Parts of that response that belong to the whole
    turn (``thinking``, response-level ``provider_data``) are kept on the first call of the batch.

    ``content`` is exactly what the model is (or was) told about the outcome: the rendered
    result, or the error text. ``result`` is the tool's return value and ``error`` the exception.
    ``parts`` holds the outcome's content parts when the tool returned a :class:`ToolOutput`
    (images, audio, resources); ``content`` is then their text form, for providers that take
    only text in tool results.

    The first call of a batch also carries the response's ``response_id`` and ``usage`` (that
    one request's tokens and cost), as on :class:`AssistantMessage`; equality ignores both.
    """

    tool_name: str
    tool_call_id: str
    arguments: Mapping[str, Any] = EMPTY
    result: Any = field(default=None, hash=False)
    """The tool's return value; plain dicts, lists and sets are kept as frozen copies."""
    error: BaseException | None = field(default=None, compare=False)
    message: str = ""
    status: ToolCallStatus = ToolCallStatus.OK
    content: str = ""
    batch_id: str = ""
    raw_arguments: str | None = None
    thinking: tuple[ThinkingPart, ...] = ()
    provider_data: Mapping[str, Any] = EMPTY
    error_type: str | None = None
    parts: tuple[ContentPart, ...] = ()
    response_id: str | None = field(default=None, compare=False)
    usage: Usage | None = field(default=None, compare=False)
    tokens: Tokens | None = field(default=None, repr=False)
    """The exact tokens of the response that asked for this batch of calls (on its first call only)."""
    kind: ClassVar[Literal["tool_call"]] = "tool_call"

    @property
    def role(self) -> Literal["assistant"]:
        """Who speaks: ``"assistant"``, who asked for the call (its outcome travels with it)."""
        return "assistant"

    def __post_init__(self) -> None:
        # Recorded values never change: a tool that mutates its arguments, or a provider payload
        # edited later, cannot rewrite what the transcript says happened.
        if type(self.arguments) is not FrozenDict:
            object.__setattr__(self, "arguments", frozen_mapping(self.arguments))
        if type(self.provider_data) is not FrozenDict:
            object.__setattr__(self, "provider_data", frozen_mapping(self.provider_data))
        if type(self.result) in _CONTAINERS:
            object.__setattr__(self, "result", freeze(self.result))
        if self.error is not None and self.error_type is None:
            object.__setattr__(self, "error_type", _error_type_name(self.error))
        if not self.batch_id:
            object.__setattr__(self, "batch_id", self.tool_call_id)

    @property
    def ok(self) -> bool:
        """True when the tool ran and returned a result."""
        return self.status is ToolCallStatus.OK

    @property
    def is_error(self) -> bool:
        """True when the model is told the call failed (error, denied or cancelled)."""
        return self.status in (ToolCallStatus.ERROR, ToolCallStatus.DENIED, ToolCallStatus.CANCELLED)

    def __repr__(self) -> str:
        parts = [
            f"tool_name={self.tool_name!r}",
            f"arguments={dict(self.arguments)!r}",
            f"status={self.status.value!r}",
        ]
        if self.status is ToolCallStatus.OK:
            parts.append(f"result={self.result!r}")
        elif self.status.finished:
            parts.append(f"content={self.content!r}")
        parts.append(f"tool_call_id={self.tool_call_id!r}")
        if self.message:
            parts.append(f"message={self.message!r}")
        return f"ToolCallMessage({', '.join(parts)})"

    def __str__(self) -> str:
        if self.is_error:
            return f"Tool call: {self.tool_name}({dict(self.arguments)}) -> {self.status.upper()}: {self.content}"
        return f"Tool call: {self.tool_name}({dict(self.arguments)}) -> {self.content}"


_CONTAINERS = (dict, list, set)

_ToolCallMessageDraft = draft_of(ToolCallMessage)


def tool_call_message(
    tool_name: str,
    tool_call_id: str,
    arguments: Mapping[str, Any],
    result: Any,
    error: BaseException | None,
    message: str,
    status: ToolCallStatus,
    content: str,
    batch_id: str,
    raw_arguments: str | None,
    thinking: tuple[ThinkingPart, ...],
    provider_data: Mapping[str, Any],
    parts: tuple[ContentPart, ...],
    response_id: str | None,
    usage: Usage | None,
    tokens: Tokens | None,
) -> ToolCallMessage:
    """``ToolCallMessage(...)`` with every field given (``error_type`` follows ``error``), the same
    value the constructor makes at a third of its cost: the loop makes two per tool call."""
    draft = new_draft(_ToolCallMessageDraft)  # see tooloop._frozen
    draft.tool_name = tool_name
    draft.tool_call_id = tool_call_id
    draft.arguments = arguments if type(arguments) is FrozenDict else frozen_mapping(arguments)
    draft.result = freeze(result) if type(result) in _CONTAINERS else result
    draft.error = error
    draft.message = message
    draft.status = status
    draft.content = content
    draft.batch_id = batch_id or tool_call_id
    draft.raw_arguments = raw_arguments
    draft.thinking = thinking
    draft.provider_data = provider_data if type(provider_data) is FrozenDict else frozen_mapping(provider_data)
    draft.error_type = None if error is None else _error_type_name(error)
    draft.parts = parts
    draft.response_id = response_id
    draft.usage = usage
    draft.tokens = tokens
    draft.__class__ = ToolCallMessage
    result_message: ToolCallMessage = draft
    return result_message


def _error_type_name(error: BaseException) -> str:
    type_name = getattr(error, "type_name", None)
    return type_name if isinstance(type_name, str) else type(error).__name__


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolCallMessage
"""Any message of a transcript."""


# ToolCall and ModelResponse are made for every response: their __init__ is written out to fill
# the fields through a draft (tooloop._frozen), with the dataclass's own signature and checks.


@dataclass(frozen=True, slots=True, init=False)
class ToolCall:
    """A tool call as the model asked for it.

    ``arguments`` may be a dict or the raw JSON text the model produced; the loop parses text once
    and reports invalid JSON to the model as an error result.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    provider_data: Mapping[str, Any] | None = None

    def __init__(
        self,
        id: str,
        name: str,
        arguments: Mapping[str, Any] | str = FACTORY,
        provider_data: Mapping[str, Any] | None = None,
    ) -> None:
        cls = type(self)
        draft: Any
        if cls is ToolCall:  # thawed(), inline
            become(self, "__class__", _ToolCallDraft)
            draft = self
        else:
            draft = thawed(self, _ToolCallDraft)
        draft.id = id
        draft.name = name
        draft.arguments = {} if arguments is FACTORY else arguments
        draft.provider_data = provider_data
        draft.__class__ = cls


_ToolCallDraft = draft_of(ToolCall)


@dataclass(frozen=True, slots=True, init=False)
class ModelResponse:
    """One answer of a model: text and/or tool calls, why it stopped, and what it cost.

    ``stop_reason`` defaults to ``TOOL_USE`` when there are tool calls and ``END_TURN`` otherwise.
    ``usage`` is this request's tokens; the loop counts the request itself. ``response_id`` is the
    provider's id of the response and ``stop_sequence`` the stop sequence that ended it, when the
    provider says (the loop keeps both on the messages it records).
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: StopReason = None  # type: ignore[assignment]  # derived in __init__
    usage: Usage = field(default_factory=Usage)
    _: KW_ONLY
    thinking: tuple[ThinkingPart, ...] = ()
    refusal: str | None = None
    model: str | None = None
    provider_data: Mapping[str, Any] = field(default_factory=dict)
    response_id: str | None = None
    stop_sequence: str | None = None
    tokens: Tokens | None = field(default=None, repr=False)
    """The exact prompt and completion tokens, when the adapter was asked to capture them."""

    def __init__(
        self,
        text: str = "",
        tool_calls: tuple[ToolCall, ...] = (),
        stop_reason: StopReason = None,  # type: ignore[assignment]  # derived below
        usage: Usage = FACTORY,
        *,
        thinking: tuple[ThinkingPart, ...] = (),
        refusal: str | None = None,
        model: str | None = None,
        provider_data: Mapping[str, Any] = FACTORY,
        response_id: str | None = None,
        stop_sequence: str | None = None,
        tokens: Tokens | None = None,
    ) -> None:
        cls = type(self)
        if not isinstance(tool_calls, tuple):
            tool_calls = tuple(tool_calls)
        if stop_reason is None:
            stop_reason = StopReason.TOOL_USE if tool_calls else StopReason.END_TURN
        elif not isinstance(stop_reason, StopReason):
            stop_reason = StopReason(stop_reason)
        draft: Any
        if cls is ModelResponse:  # thawed(), inline
            become(self, "__class__", _ModelResponseDraft)
            draft = self
        else:
            draft = thawed(self, _ModelResponseDraft)
        draft.text = text
        draft.tool_calls = tool_calls
        draft.stop_reason = stop_reason
        draft.usage = Usage() if usage is FACTORY else usage
        draft.thinking = thinking
        draft.refusal = refusal
        draft.model = model
        draft.provider_data = {} if provider_data is FACTORY else provider_data
        draft.response_id = response_id
        draft.stop_sequence = stop_sequence
        draft.tokens = tokens
        draft.__class__ = cls


_ModelResponseDraft = draft_of(ModelResponse)


def with_usage(response: ModelResponse, usage: Usage) -> ModelResponse:
    """``dataclasses.replace(response, usage=usage)`` at a fraction of its cost (the loop prices
    every response of a priced provider this way)."""
    if type(response) is not ModelResponse:  # a subclass may have fields of its own
        return replace(response, usage=usage)
    draft = new_draft(_ModelResponseDraft)  # see tooloop._frozen
    draft.text = response.text
    draft.tool_calls = response.tool_calls
    draft.stop_reason = response.stop_reason
    draft.usage = usage
    draft.thinking = response.thinking
    draft.refusal = response.refusal
    draft.model = response.model
    draft.provider_data = response.provider_data
    draft.response_id = response.response_id
    draft.stop_sequence = response.stop_sequence
    draft.tokens = response.tokens
    draft.__class__ = ModelResponse
    copied: ModelResponse = draft
    return copied


def response_messages(messages: Sequence[Message]) -> Iterator[tuple[int, AssistantMessage | ToolCallMessage]]:
    """``(position, message)`` of each message that records a model response: every answer, and
    the first call of each batch of tool calls (where the response's tokens are kept)."""
    batch: str | None = None
    for position, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            batch = None
            yield position, message
        elif isinstance(message, ToolCallMessage):
            if message.batch_id != batch:
                yield position, message
            batch = message.batch_id
        else:
            batch = None
