"""Structured output: the schema sent to the model and validation of its final answer."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .._checks import describe
from .._typeddict import portable_type
from ..errors import ArgumentTypeError
from ..models.base import OutputSchema

__all__ = ["OutputSpec"]

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """How to check a final answer against ``output_type``."""

    output_type: Any
    schema: OutputSchema
    adapter: Any  # pydantic.TypeAdapter, kept untyped so this module imports pydantic lazily
    wrapped: bool = False
    """True when a non-object type is asked for as ``{"result": ...}``."""

    @classmethod
    def for_type(cls, output_type: Any) -> OutputSpec:
        """Build the schema and validator for a pydantic model, dataclass, TypedDict or type.

        Raises :class:`~tooloop.errors.ArgumentTypeError` when pydantic cannot describe the type.
        """
        from pydantic import PydanticUserError, TypeAdapter

        try:
            adapter = TypeAdapter(portable_type(output_type))
            schema = adapter.json_schema()
        except (PydanticUserError, TypeError, ValueError, NameError, RecursionError) as exc:
            raise ArgumentTypeError(
                f"output_type got {describe(output_type)}, which cannot be described as a JSON schema "
                f"({_first_line(exc)}); pass a pydantic model, a dataclass, a TypedDict or a type such as list[str]"
            ) from exc
        name = getattr(output_type, "__name__", None) or "output"
        wrapped = schema.get("type") != "object"
        if wrapped:
            schema = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        description = schema.get("description") if isinstance(schema.get("description"), str) else None
        return cls(output_type, OutputSchema(_safe_name(name), schema, description), adapter, wrapped)

    def validate(self, text: str) -> Any:
        """The validated output; raises ``ValueError`` with a message the model can act on."""
        from pydantic import ValidationError

        candidate = _strip_fence(text)
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the answer is not valid JSON ({exc.msg} at position {exc.pos})") from None
        if self.wrapped:
            if not isinstance(data, dict) or "result" not in data:
                raise ValueError('the answer must be a JSON object with a "result" field')
            data = data["result"]
        try:
            return self.adapter.validate_python(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors(include_url=False)
            )
            raise ValueError(f"the answer does not match the schema: {problems}") from None

    def retry_prompt(self, problem: str) -> str:
        """What the model is told when its answer did not validate."""
        return (
            f"Your final answer could not be used: {problem}. Reply again with only a JSON value matching "
            f"this schema, and nothing else:\n{json.dumps(self.schema.schema)}"
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0].split(". ")[0].rstrip(".") if text else type(exc).__name__


def _strip_fence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text.strip()


def _safe_name(name: str) -> str:
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64]
    return cleaned or "output"
