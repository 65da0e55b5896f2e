"""JSON schema and argument validation for a Python function, from its type hints and docstring."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..errors import ConfigurationError

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
        if annotation is context_type:
            context_param = param.name
            continue
        fields[param.name] = _field(param, annotation, doc.params.get(param.name))
    model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    schema = _clean(model.model_json_schema())
    schema.setdefault("properties", {})
    return FunctionSchema(doc.description, schema, model, context_param)


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
