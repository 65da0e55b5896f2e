"""The token-level view of a conversation: branches of ids, logprobs and loss masks."""

from __future__ import annotations

import base64
import binascii
import math
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import ToolloopError
from ..messages import Message, Tokens, little_endian, native_order, response_messages

if TYPE_CHECKING:
    from ..loop.result import RunResult
    from ..store.base import Store

__all__ = ["Branch", "Reward", "Trajectory", "TrajectoryError", "response_messages"]

Reward = float | Mapping[str, Any]
"""What a reward function returns: a number, or a mapping of named scores (with ``"reward"``)."""

_NAN = array("f", [math.nan]).tobytes()


class TrajectoryError(ToolloopError, ValueError):
    """A conversation's tokens cannot be one branch (``strict=True``), or a trajectory's dict is malformed."""


@dataclass(frozen=True, slots=True, eq=False)
class Branch:
    """One stretch of tokens the model saw as a single growing sequence.

    ``token_ids``, ``logprobs`` and ``loss_mask`` have the same length: the first prompt, then
    for each response its sampled tokens (mask 1, with their logprobs) and the tokens the
    environment added before the next response (tool results and the chat template: mask 0,
    logprob None). ``responses`` are the transcript positions of the responses it holds;
    ``reason`` says why it starts (the first branch: ``"first response"``).
    """

    ids: bytes
    """The token ids as 32-bit ints (native order); :attr:`token_ids` reads them."""
    logprob_values: bytes
    """One 32-bit float per token, NaN for none (as :attr:`Tokens.logprobs`; 64-bit floats, 8
    bytes per token, are converted on construction); :attr:`logprobs` reads them."""
    mask: bytes
    """One byte (0 or 1) per token; :attr:`loss_mask` reads them."""
    responses: tuple[int, ...]
    reason: str

    def __post_init__(self) -> None:
        if self.logprob_values and len(self.logprob_values) == 8 * len(self.mask):
            object.__setattr__(self, "logprob_values", array("f", _unpack_doubles(self.logprob_values)).tobytes())

    @property
    def token_ids(self) -> list[int]:
        """The token ids."""
        values = array("i")
        values.frombytes(self.ids)
        return values.tolist()

    @property
    def logprobs(self) -> list[float | None]:
        """One log-probability per token: the sampled tokens' where the server gave one, else None."""
        values = array("f")
        values.frombytes(self.logprob_values)
        return [None if v != v else v for v in values]

    @property
    def loss_mask(self) -> list[int]:
        """1 for each token the model sampled, 0 for every other."""
        return list(self.mask)

    def __len__(self) -> int:
        return len(self.mask)

    def __repr__(self) -> str:
        return (
            f"Branch({len(self.mask)} tokens, {sum(self.mask)} sampled, responses={self.responses!r}, "
            f"reason={self.reason!r})"
        )

    def to_dict(self, *, compact: bool = False) -> dict[str, Any]:
        """Plain JSON: ``token_ids``, ``logprobs`` (None where none), ``loss_mask``, ``responses``, ``reason``.

        ``compact=True`` (how batch records of earlier versions kept it) gives base64 strings of little-endian values
        instead of lists: ``token_ids`` (32-bit ints), ``loss_mask`` (one byte per token) and, in
        place of ``logprobs``, ``sampled_logprobs`` (32-bit floats, NaN for none; records written
        before logprobs were kept as 32-bit floats hold 64-bit ones) of the tokens whose mask is 1
        only, as every other token's is None; :meth:`from_dict` reads both forms.
        """
        if compact:
            return {
                "token_ids": _b64(little_endian(self.ids, "i")),
                "sampled_logprobs": _b64(little_endian(self._sampled_logprobs(), "f")),
                "loss_mask": _b64(self.mask),
                "responses": list(self.responses),
                "reason": self.reason,
            }
        return {
            "token_ids": self.token_ids,
            "logprobs": self.logprobs,
            "loss_mask": self.loss_mask,
            "responses": list(self.responses),
            "reason": self.reason,
        }

    def _sampled_logprobs(self) -> bytes:
        """The logprobs of the sampled tokens (mask 1), run by run: one slice per response."""
        pieces = []
        start = self.mask.find(1)
        while start >= 0:
            end = self.mask.find(0, start)
            end = len(self.mask) if end < 0 else end
            pieces.append(self.logprob_values[start * 4 : end * 4])
            start = self.mask.find(1, end)
        return b"".join(pieces)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Branch:
        """Read :meth:`to_dict`'s forms; :class:`TrajectoryError` when it does not line up."""
        try:
            if isinstance(data["token_ids"], str):
                ids, logprobs, mask = _compact_arrays(data)
            else:
                ids = array("i", data["token_ids"])
                logprobs = array("f", [math.nan if v is None else v for v in data["logprobs"]])
                mask = bytes(data["loss_mask"])
            responses = tuple(int(p) for p in data.get("responses", ()))
            reason = str(data.get("reason", ""))
        except (KeyError, TypeError, ValueError, OverflowError, binascii.Error) as exc:
            raise TrajectoryError(f"a branch dict cannot be read: {exc!r}") from exc
        if not len(ids) == len(logprobs) == len(mask) or any(m > 1 for m in mask):
            raise TrajectoryError(
                f"a branch needs token_ids, logprobs and loss_mask of one length and a 0/1 mask, got "
                f"{len(ids)}, {len(logprobs)} and {len(mask)}"
            )
        return cls(ids.tobytes(), logprobs.tobytes(), mask, responses, reason)

    def dataset_row(self) -> dict[str, Any]:
        """The columns trainers read (see :meth:`Trajectory.to_dataset_rows`), without the reward."""
        start = self.mask.find(1)
        start = len(self.mask) if start < 0 else start
        ids = self.token_ids
        logprobs = _zero_unsampled(self.logprob_values[start * 4 :], self.mask[start:]).tolist()
        mask = list(self.mask[start:])
        return {
            "prompt_ids": ids[:start],
            "prompt_mask": [1] * start,
            "completion_ids": ids[start:],
            "completion_mask": mask,
            "completion_logprobs": logprobs,
            "logprobs": logprobs,
            "env_mask": mask,
        }


_ALL_ONES = bytes.maketrans(b"\x01", b"\xff")
_TOP_BYTE = slice(3, None, 4) if sys.byteorder == "little" else slice(0, None, 4)
_NOT_HUGE = bytes(b for b in range(256) if b & 0x7F != 0x7F)
"""Every top byte but those of NaN, infinities and the largest finite 32-bit floats."""


def _zero_unsampled(values: bytes, mask: bytes) -> array[float]:
    """The 32-bit floats ``values`` with 0.0 where ``mask`` (a byte per value) is 0 or the value is
    NaN (none given): the unsampled ones zeroed at once by a bitwise and with the mask spread
    over each value's four bytes; the rest one by one only when a value's top byte says it may be
    a NaN (or infinite, or above 1.7e38 in size: never a logprob otherwise)."""
    spread = bytearray(len(values))
    ones = mask.translate(_ALL_ONES)
    for lane in range(4):
        spread[lane::4] = ones
    kept = (int.from_bytes(values, "little") & int.from_bytes(spread, "little")).to_bytes(len(values), "little")
    out = array("f")
    out.frombytes(kept)
    if kept[_TOP_BYTE].translate(None, _NOT_HUGE):  # maybe a NaN left: a sampled token without a logprob
        return array("f", [0.0 if v != v else v for v in out])
    return out


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unpack_doubles(data: bytes) -> array[float]:
    values = array("d")
    values.frombytes(data)
    return values


def _compact_arrays(data: Mapping[str, Any]) -> tuple[array[int], array[float], bytes]:
    """The arrays of a compact branch dict (base64 of little-endian values; the sampled tokens'
    logprobs only, put back in place with None, NaN, for every other token)."""
    ids = array("i")
    ids.frombytes(native_order(base64.b64decode(data["token_ids"], validate=True), "i"))
    mask = base64.b64decode(data["loss_mask"], validate=True)
    raw = base64.b64decode(data["sampled_logprobs"], validate=True)
    count = mask.count(1)
    if count and len(raw) == 8 * count:  # written before logprobs were kept as 32-bit floats
        sampled = array("f", _unpack_doubles(native_order(raw, "d")))
    else:
        sampled = array("f")
        sampled.frombytes(native_order(raw, "f"))
    if len(sampled) != count:
        raise ValueError(f"{len(sampled)} sampled logprobs for a mask of {count} sampled tokens")
    logprobs = array("f", _NAN * len(mask))
    values = iter(sampled)
    for position, flag in enumerate(mask):
        if flag:
            logprobs[position] = next(values)
    return ids, logprobs, mask


class _Stretch:
    """A branch being grown: the ids each response's prompt adds (None: its own ``prompt``, which
    extends the branch so far) and its tokens, joined into ids only when they are read (a record
    needs only their lengths; no object per token)."""

    __slots__ = ("added", "joined", "news", "reason", "responses", "size", "tokens")

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.news: list[bytes | None] = []
        self.added: list[int] = []  # how many ids each response's prompt adds
        self.tokens: list[Tokens] = []
        self.responses: list[int] = []
        self.size = 0  # ids so far
        self.joined = b""  # the ids, once read (while it is shorter than size, stale)

    def add(self, position: int, new: bytes | None, tokens: Tokens) -> None:
        # None: the prompt extends the branch so far, which holds all the ids before its own
        added = tokens.prompt_length - self.size if new is None else len(new) // 4
        self.news.append(new)
        self.added.append(added)
        self.tokens.append(tokens)
        self.responses.append(position)
        self.size += added + tokens.completion_length

    def ids(self) -> bytes:
        if len(self.joined) < 4 * self.size:
            pieces: list[bytes] = []
            for new, tokens in zip(self.news, self.tokens, strict=True):
                pieces += (tokens.prompt if new is None else new, tokens.completion)
            self.joined = b"".join(pieces)
        return self.joined

    def branch(self) -> Branch:
        logprobs: list[bytes] = []
        mask: list[bytes] = []
        for added, tokens in zip(self.added, self.tokens, strict=True):
            sampled = tokens.completion_length
            logprobs += (_NAN * added, tokens.logprobs or _NAN * sampled)
            mask += (bytes(added), b"\x01" * sampled)
        return Branch(self.ids(), b"".join(logprobs), b"".join(mask), tuple(self.responses), self.reason)

    def shape(self) -> dict[str, Any]:
        sampled = sum(tokens.completion_length for tokens in self.tokens)
        return {"responses": self.responses, "reason": self.reason, "length": self.size, "sampled": sampled}


class _Builder:
    """Branches grown response by response (:class:`_Stretch` values); ``unused`` says which
    responses could not be used and why."""

    def __init__(self) -> None:
        self.stretches: list[_Stretch] = []
        self.unused: list[str] = []
        self._open: _Stretch | None = None
        self._reason = "first response"
        self._last: Tokens | None = None

    def add(self, position: int, tokens: Tokens | None) -> None:
        if tokens is None or not tokens.ok:
            why = _unusable(position, tokens)
            self.unused.append(why)
            self._close(why)
            return
        stretch = self._open
        new: bytes | None = None  # the ids after the branch so far are its prompt: nothing to compare
        if stretch is None or tokens.extends is not self._last:
            new = tokens.whole_prompt
            if stretch is not None:
                ids = stretch.ids()
                if new.startswith(ids):
                    new = new[len(ids) :]
                else:
                    why = _diverged(position, new, ids)
                    self._close(f"{why}; it was sent as messages: {tokens.fallback}" if tokens.fallback else why)
                    stretch = None
        if stretch is None:
            stretch = self._open = _Stretch(self._reason)
        stretch.add(position, new, tokens)
        self._last = tokens

    def _close(self, reason: str) -> None:
        if self._open is not None:
            self.stretches.append(self._open)
            self._open = None
            self._reason = reason
        elif self.stretches or self.unused:
            self._reason = reason

    def finish(self) -> None:
        self._close("end")


def _built(responses: Iterable[tuple[int, Tokens | None]]) -> _Builder:
    builder = _Builder()
    for position, tokens in responses:
        builder.add(position, tokens)
    builder.finish()
    return builder


_BY_TRANSCRIPT = "transcript"
"""A record trajectory's ``"tokens"``: its token arrays are those of the record's own transcript."""


def record_form(messages: Sequence[Message]) -> dict[str, Any] | None:
    """A ``run_many`` record's ``trajectory``: the shape of each branch (``responses``, ``reason``,
    ``length`` in tokens, ``sampled`` tokens) and ``unused``, under ``"tokens": "transcript"``: the
    ids and logprobs are the record's transcript's, written there once, and
    :meth:`Trajectory.from_record` rebuilds the branches from them and checks them against these
    shapes. None when no response has tokens (nothing was captured)."""
    responses = [(position, message.tokens) for position, message in response_messages(messages)]
    if all(tokens is None for _, tokens in responses):
        return None
    builder = _built(responses)
    return {"tokens": _BY_TRANSCRIPT, "branches": [s.shape() for s in builder.stretches], "unused": builder.unused}


def _shapes(data: Mapping[str, Any]) -> tuple[list[tuple[tuple[int, ...], int, int]], list[str], tuple[str, ...]]:
    """The branch shapes, reasons and unused responses a record's trajectory describes."""
    try:
        branches = data["branches"]
        shapes = [(tuple(int(p) for p in b["responses"]), int(b["length"]), int(b["sampled"])) for b in branches]
        reasons = [str(b["reason"]) for b in branches]
        unused = tuple(str(u) for u in data.get("unused", ()))
    except (KeyError, TypeError, ValueError) as exc:
        raise TrajectoryError(f"the record's trajectory cannot be read: {exc!r}") from exc
    return shapes, reasons, unused


def _as_described(built: Trajectory, data: Mapping[str, Any]) -> Trajectory:
    """``built`` from a record's transcript, checked against the shapes the record's trajectory
    gives (with the reasons written there)."""
    shapes, reasons, unused = _shapes(data)
    found = [(b.responses, len(b), b.mask.count(1)) for b in built.branches]
    if found != shapes or len(unused) != len(built.unused):
        raise TrajectoryError(
            f"the record's transcript gives branches {found} (responses, tokens, sampled) and "
            f"{len(built.unused)} unused responses, where its trajectory says {shapes} and {len(unused)}"
        )
    branches = tuple(replace(b, reason=r) for b, r in zip(built.branches, reasons, strict=True))
    return Trajectory(branches, unused)


def _unusable(position: int, tokens: Tokens | None) -> str:
    if tokens is None:
        return f"the response at message {position} has no tokens (captured with capture_tokens=True?)"
    if tokens.problem is not None:
        return f"the response at message {position}: {tokens.problem}"
    return f"the response at message {position} has no prompt or no completion ids"


def _diverged(position: int, prompt: bytes, branch: bytes) -> str:
    if len(prompt) < len(branch) and branch.startswith(prompt):
        return (
            f"the prompt of the response at message {position} is shorter than the previous branch "
            f"({len(prompt) // 4} < {len(branch) // 4} tokens: context pruned or summarised)"
        )
    first = next((i for i in range(0, min(len(prompt), len(branch)), 4) if prompt[i : i + 4] != branch[i : i + 4]), 0)
    return (
        f"the prompt of the response at message {position} does not extend the previous branch "
        f"(first difference at token {first // 4}: a chat template that is not append-only, or an edited history)"
    )


@dataclass(frozen=True, slots=True)
class Trajectory:
    """The token-level view of one conversation, for training: a list of :class:`Branch` values.

    Each response's prompt ids must extend the previous response's prompt and completion ids
    exactly; where they do not (a template that is not append-only, context pruning, a
    summary) a new branch starts and its ``reason`` says why. A response whose tokens cannot
    be used (not captured, or flagged by the adapter: ids of the wrong length, none sent) ends
    the branch and is listed in ``unused``: its sampled tokens are never trained on.
    ``reward`` is what a batch's reward function gave, when it came from a batch record.
    """

    branches: tuple[Branch, ...]
    unused: tuple[str, ...] = ()
    reward: Reward | None = None

    @classmethod
    def from_messages(cls, messages: Sequence[Message], *, strict: bool = False) -> Trajectory:
        """The trajectory of a transcript (or any sequence of messages).

        ``strict=True`` raises :class:`TrajectoryError` unless the whole conversation is one
        branch with every response's tokens usable.
        """
        builder = _built((position, message.tokens) for position, message in response_messages(messages))
        trajectory = cls(tuple(s.branch() for s in builder.stretches), tuple(builder.unused))
        if strict:
            trajectory.check_single()
        return trajectory

    @classmethod
    def from_result(cls, result: RunResult, *, strict: bool = False) -> Trajectory:
        """The trajectory of a run's transcript (see :meth:`from_messages`)."""
        return cls.from_messages(result.transcript, strict=strict)

    @classmethod
    async def from_session(cls, store: Store, session_id: str, *, strict: bool = False) -> Trajectory:
        """The trajectory of a stored session."""
        return cls.from_messages(await store.load(session_id), strict=strict)

    @classmethod
    def from_record(cls, record: Mapping[str, Any], *, strict: bool = False) -> Trajectory:
        """The trajectory of a ``run_many`` record (a line of its results file, decoded), with its ``reward``.

        Built from the record's ``transcript`` and checked against the branch shapes its
        ``trajectory`` gives (:class:`TrajectoryError` when they differ); a record of an earlier
        version whose ``trajectory`` holds the arrays themselves is read from those.
        """
        from ..transcript import Transcript

        data = record.get("trajectory")
        by_transcript = isinstance(data, Mapping) and data.get("tokens") == _BY_TRANSCRIPT
        if data is not None and not by_transcript:
            trajectory = cls.from_dict(data)  # arrays written in the record (records of earlier versions)
        elif record.get("transcript") is not None:
            trajectory = cls.from_messages(Transcript.from_json(record["transcript"]))
            if data is not None:
                trajectory = _as_described(trajectory, data)
        elif by_transcript:
            raise TrajectoryError("the record's trajectory refers to its transcript, and the record has none")
        else:
            raise TrajectoryError("the record has neither a trajectory nor a transcript")
        if strict:
            trajectory.check_single()
        return cls(trajectory.branches, trajectory.unused, record.get("reward"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trajectory:
        """Read :meth:`to_dict`'s form."""
        if not isinstance(data, Mapping) or not isinstance(data.get("branches"), list):
            raise TrajectoryError("a trajectory dict needs a 'branches' list")
        if data.get("tokens") == _BY_TRANSCRIPT:
            raise TrajectoryError(
                "this trajectory's tokens are in its record's transcript: read the whole record with "
                "Trajectory.from_record(record)"
            )
        branches = tuple(Branch.from_dict(b) for b in data["branches"])
        return cls(branches, tuple(str(u) for u in data.get("unused", ())), data.get("reward"))

    def check_single(self) -> None:
        """Raise :class:`TrajectoryError` unless this is one branch with every response usable."""
        if self.unused:
            raise TrajectoryError(self.unused[0])
        if len(self.branches) > 1:
            raise TrajectoryError(self.branches[1].reason)
        if not self.branches:
            raise TrajectoryError("the conversation has no model response")

    def to_dict(self, *, compact: bool = False) -> dict[str, Any]:
        """Plain JSON: ``branches`` (each :meth:`Branch.to_dict`, ``compact`` or not), ``unused``
        and, when set, ``reward``."""
        data: dict[str, Any] = {
            "branches": [b.to_dict(compact=compact) for b in self.branches],
            "unused": list(self.unused),
        }
        if self.reward is not None:
            data["reward"] = dict(self.reward) if isinstance(self.reward, Mapping) else self.reward
        return data

    def to_dataset_rows(self, reward: Reward | None = None) -> list[dict[str, Any]]:
        """One row per branch, with the column names TRL and verifiers read.

        ``prompt_ids`` (the tokens before the first sampled one) with ``prompt_mask`` (all 1),
        ``completion_ids`` (everything after: sampled tokens and the environment's between them),
        ``completion_mask`` (the loss mask over them), ``completion_logprobs`` (0.0 where the
        mask is 0 or the server gave none); TRL's names for the same columns, ``logprobs`` and
        ``env_mask``; and ``reward`` (``reward`` given here, else the trajectory's; a mapping is
        merged into the row).
        """
        value = reward if reward is not None else self.reward
        rows = []
        for branch in self.branches:
            row = branch.dataset_row()
            if isinstance(value, Mapping):
                row.update(value)
            else:
                row["reward"] = value
            rows.append(row)
        return rows

    def to_dataset_row(self, reward: Reward | None = None) -> dict[str, Any]:
        """The row of a one-branch trajectory (see :meth:`to_dataset_rows`); :class:`TrajectoryError`
        when there are several branches (use :meth:`to_dataset_rows`) or none."""
        if len(self.branches) != 1:
            raise TrajectoryError(
                f"the trajectory has {len(self.branches)} branches, not one: use to_dataset_rows()"
                + (f" (branch 2: {self.branches[1].reason})" if len(self.branches) > 1 else "")
            )
        return self.to_dataset_rows(reward)[0]
