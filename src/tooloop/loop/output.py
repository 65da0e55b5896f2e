"""Structured output: the schema sent to the model and validation of its final answer."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
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
    adapter: Any  # pydantic.TypeAdapter or a jsonschema validator, untyped so both import lazily
    wrapped: bool = False
    """True when a non-object type is asked for as ``{"result": ...}``."""
    json_schema: bool = False
    """True when ``output_type`` is a JSON Schema (``adapter`` is then a jsonschema validator)."""

    @classmethod
    def for_type(cls, output_type: Any) -> OutputSpec:
        """Build the schema and validator for a pydantic model, dataclass, TypedDict, type, or a
        JSON Schema given as a dict (the output is then the JSON value, validated against it).

        Raises :class:`~tooloop.errors.ArgumentTypeError` when pydantic cannot describe the type
        or the dict is not a valid JSON Schema.
        """
        if isinstance(output_type, Mapping):
            return cls._for_json_schema(output_type)
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

    @classmethod
    def _for_json_schema(cls, given: Mapping[str, Any]) -> OutputSpec:
        try:
            schema = json.loads(json.dumps(given))  # a private copy, and only JSON in it
        except (TypeError, ValueError) as exc:
            raise ArgumentTypeError(f"output_type got a dict that is not JSON ({exc}); pass a JSON Schema") from None
        if not schema:
            raise ArgumentTypeError(
                "output_type got an empty JSON Schema, which accepts any answer; give at least its type, "
                'e.g. {"type": "object", "properties": {"name": {"type": "string"}}}'
            )
        validator = _schema_validator(schema)
        name = schema.get("title") if isinstance(schema.get("title"), str) else "output"
        wrapped = schema.get("type") != "object"
        sent = {"type": "object", "properties": {"result": schema}, "required": ["result"]} if wrapped else schema
        description = schema.get("description") if isinstance(schema.get("description"), str) else None
        return cls(schema, OutputSchema(_safe_name(name), sent, description), validator, wrapped, json_schema=True)

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
        if self.json_schema:
            return _check_json(self.adapter, data)
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

    def instructions(self) -> str:
        """The system instructions that ask for this output, for models without native structured output."""
        return (
            "Give your final answer as only a JSON value matching this JSON Schema, with no other text "
            f"and no code fence:\n{json.dumps(self.schema.schema)}"
        )


def with_output_instructions(system: str | None, output: OutputSpec | None, model: Any) -> str | None:
    """``system`` with the output schema appended when ``model`` does not send it natively, so the
    first answer can match it without a retry (a model says it does with ``native_output = True``)."""
    if output is None or getattr(model, "native_output", False) is True:
        return system
    return f"{system}\n\n{output.instructions()}" if system else output.instructions()


def _schema_validator(schema: dict[str, Any]) -> Any:
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        kind = validator_for(schema)
        kind.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        at = f" (at {where})" if where else ""
        raise ArgumentTypeError(f"output_type got a dict that is not a valid JSON Schema: {exc.message}{at}") from None
    return kind(schema)


def _check_json(validator: Any, data: Any) -> Any:
    problems = [
        f"{'.'.join(str(p) for p in error.absolute_path) or 'value'}: {error.message}"
        for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    ]
    if problems:
        raise ValueError(f"the answer does not match the schema: {'; '.join(problems[:10])}")
    return data


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0].split(". ")[0].rstrip(".") if text else type(exc).__name__


def _strip_fence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text.strip()


def _safe_name(name: str) -> str:
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64]
    return cleaned or "output"
