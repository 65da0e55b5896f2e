"""JSON schema and argument validation for a Python function, from its type hints and docstring."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, TypeAdapter, create_model

from .._typeddict import portable_type
from ..errors import ArgumentTypeError, ConfigurationError

__all__ = ["FunctionSchema", "function_schema"]


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """What a tool needs to know about a function: description, schema, validator, injections."""

    description: str
    parameters: dict[str, Any]
    args_model: type[BaseModel]
    context_param: str | None


def function_schema(fn: Callable[..., Any], context_type: type, *, name: str) -> FunctionSchema:
    """Describe ``fn``'s parameters as a JSON schema, with a pydantic model to validate them.

    Descriptions come from ``Annotated[..., Field(description=...)]``, ``Annotated[..., "text"]``
    or the docstring's parameter section (Google, NumPy or reST style). A parameter annotated with
    ``context_type`` is not part of the schema: the tool receives its context there.
    """
    doc = _parse_doc(inspect.getdoc(fn) or "")
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except (NameError, TypeError) as exc:
        raise ConfigurationError(f"cannot read the type hints of tool {name!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    context_param = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, Any)
        if annotation is context_type or typing.get_origin(annotation) is context_type:
            context_param = param.name
            continue
        fields[param.name] = _field(param, portable_type(annotation), doc.params.get(param.name))
    try:
        model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        schema = _clean(model.model_json_schema())
    except (PydanticUserError, TypeError, ValueError, NameError, RecursionError) as exc:
        raise _undescribable(name, fields, exc) from exc
    schema.setdefault("properties", {})
    return FunctionSchema(doc.description, schema, model, context_param)


def _undescribable(name: str, fields: Mapping[str, tuple[Any, Any]], exc: Exception) -> ArgumentTypeError:
    """The error naming the first parameter whose type pydantic cannot turn into a JSON schema."""
    for param, (annotation, _) in fields.items():
        try:
            TypeAdapter(annotation).json_schema()
        except Exception:  # the culprit: any failure to describe it
            return ArgumentTypeError(
                f"parameter {param!r} of tool {name!r} has type {annotation!r}, which cannot be described as a JSON "
                "schema; annotate it with a JSON-friendly type (str, int, list[str], a pydantic model, a dataclass, "
                "a TypedDict...)"
            )
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ArgumentTypeError(f"the parameters of tool {name!r} cannot be described as a JSON schema: {first}")


def _field(param: inspect.Parameter, annotation: Any, doc_text: str | None) -> tuple[Any, Any]:
    description = doc_text
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extras = typing.get_args(annotation)
        strings = [e for e in extras if isinstance(e, str)]
        if strings:
            description = strings[0]
            others = [e for e in extras if not isinstance(e, str)]
            annotation = typing.Annotated[(base, *others)] if others else base
    default = ... if param.default is inspect.Parameter.empty else param.default
    if description is None:
        # an explicit description=None would override one given in Annotated[..., Field(...)]
        return annotation, Field(default)
    return annotation, Field(default, description=description)


@dataclass(frozen=True, slots=True)
class _Doc:
    description: str
    params: dict[str, str]


def _parse_doc(text: str) -> _Doc:
    if not text:
        return _Doc("", {})
    import docstring_parser

    parsed = docstring_parser.parse(text)
    parts = [p for p in (parsed.short_description, parsed.long_description) if p]
    params = {p.arg_name: p.description for p in parsed.params if p.description}
    return _Doc("\n\n".join(parts), params)


def _clean(schema: Any) -> Any:
    """Drop pydantic's generated ``title`` keys (noise for a model), keeping property names."""
    if isinstance(schema, list):
        return [_clean(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            cleaned[key] = {name: _clean(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _clean(value)
    return cleaned
