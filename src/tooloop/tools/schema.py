"""JSON schema and argument validation for a Python function, from its type hints and docstring.

pydantic describes and validates the parameters, except for the commonest tools: when every
parameter is a plain ``str``, ``int``, ``float`` or ``bool`` (or one of them ``| None``) with a
plain default, the schema pydantic would give is written here directly, and arguments of exactly
those types are accepted without it. Anything else (a missing or unknown key, a value pydantic
would convert or refuse) goes to the pydantic model, built on that first need, so what a tool
accepts and the errors it reports are pydantic's in every case. A program whose tools are all
plain then never imports pydantic (about 60 ms and 10 MB per process).
"""

from __future__ import annotations

import inspect
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._typeddict import portable_type
from ..errors import ArgumentTypeError, ConfigurationError, ToolArgumentsError
from ..messages import thaw

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["Arguments", "FunctionSchema", "function_schema"]

_REQUIRED: Any = ...
"""The default of a required parameter (pydantic's marker too)."""

_JSON_TYPE = {str: "string", int: "integer", float: "number", bool: "boolean"}

# pydantic warns about (or refuses) fields named like these: such tools take the pydantic path.
_MODEL_NAMES = frozenset(
    {"construct", "copy", "dict", "from_orm", "json", "parse_file", "parse_obj", "parse_raw", "schema"}
    | {"schema_json", "update_forward_refs", "validate"}
)

_Param = tuple[Any, Any, "str | None"]
"""A parameter as ``(annotation, default or ..., description)``."""


@dataclass(frozen=True, slots=True)
class _Plain:
    """A parameter of one plain type: ``kind`` (str, int, float or bool), possibly ``| None``."""

    name: str
    kind: type
    nullable: bool
    default: Any


class Arguments:
    """A tool's argument validator: its pydantic model, built when first needed.

    ``plain`` (when every parameter is plain) lets :meth:`validate` accept arguments that are
    already of the exact types without the model; pydantic decides everything else.
    """

    __slots__ = ("_build", "_model", "_plain")

    def __init__(self, build: Callable[[], type[BaseModel]], plain: tuple[_Plain, ...] | None = None) -> None:
        self._build = build
        self._model: type[BaseModel] | None = None
        self._plain = plain

    @classmethod
    def of_model(cls, model: type[BaseModel]) -> Arguments:
        """The validator of a pydantic model already built."""
        arguments = cls(lambda: model)
        arguments._model = model
        return arguments

    @property
    def model(self) -> type[BaseModel]:
        """The pydantic model of the parameters (built on first access)."""
        if self._model is None:
            self._model = self._build()
        return self._model

    def validate(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments for the function (a deep copy); raises :class:`ToolArgumentsError`."""
        if self._plain is not None:
            accepted = _accept(self._plain, arguments)
            if accepted is not None:
                return accepted
        from pydantic import ValidationError

        try:
            parsed = self.model.model_validate(thaw(arguments))
        except ValidationError as exc:
            raise ToolArgumentsError(_validation_message(tool, exc)) from None
        return dict(parsed.__dict__)  # a model's __dict__ holds exactly its field values


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """What a tool needs to know about a function: description, schema, validator, injections."""

    description: str
    parameters: dict[str, Any]
    arguments: Arguments
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
    fields: dict[str, _Param] = {}
    context_param = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, Any)
        if annotation is context_type or typing.get_origin(annotation) is context_type:
            context_param = param.name
            continue
        fields[param.name] = _field(param, portable_type(annotation), doc.params.get(param.name))
    plain = _plain_fields(fields)
    if plain is not None:
        arguments = Arguments(lambda: _model(name, fields), plain)
        return FunctionSchema(doc.description, _plain_schema(plain, fields), arguments, context_param)
    from pydantic import PydanticUserError

    try:
        model = _model(name, fields)
        schema = _clean(model.model_json_schema())
    except (PydanticUserError, TypeError, ValueError, NameError, RecursionError) as exc:
        raise _undescribable(name, fields, exc) from exc
    schema.setdefault("properties", {})
    return FunctionSchema(doc.description, schema, Arguments.of_model(model), context_param)


def _model(name: str, fields: Mapping[str, _Param]) -> type[BaseModel]:
    from pydantic import ConfigDict, create_model
    from pydantic import Field as Info

    definitions: dict[str, Any] = {}
    for param, (annotation, default, description) in fields.items():
        # an explicit description=None would override one given in Annotated[..., Field(...)]
        info = Info(default) if description is None else Info(default, description=description)
        definitions[param] = (annotation, info)
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **definitions)


def _plain_fields(fields: Mapping[str, _Param]) -> tuple[_Plain, ...] | None:
    """The parameters as :class:`_Plain`, or None when one of them is not plain."""
    plain = []
    for param, (annotation, default, _) in fields.items():
        kind, nullable = _plain_type(annotation)
        if kind is None or param.startswith(("_", "model_")) or param in _MODEL_NAMES:
            return None
        if not (default is _REQUIRED or default is None or type(default) in (str, int, bool)):
            if type(default) is not float or not math.isfinite(default):
                return None
        plain.append(_Plain(param, kind, nullable, default))
    return tuple(plain)


def _plain_type(annotation: Any) -> tuple[type | None, bool]:
    """``(kind, nullable)`` for ``kind`` or ``kind | None`` (``Optional[kind]``); ``(None, False)`` otherwise."""
    for kind in _JSON_TYPE:
        if annotation is kind:
            return kind, False
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        if len(args) == 2 and args[1] is type(None):
            for kind in _JSON_TYPE:
                if args[0] is kind:
                    return kind, True
    return None, False


def _plain_schema(plain: tuple[_Plain, ...], fields: Mapping[str, _Param]) -> dict[str, Any]:
    """The schema pydantic gives for these parameters, titles dropped (its key order included)."""
    properties: dict[str, Any] = {}
    for p in plain:
        kind = {"type": _JSON_TYPE[p.kind]}
        prop: dict[str, Any] = {"anyOf": [kind, {"type": "null"}]} if p.nullable else {}
        if p.default is not _REQUIRED:
            prop["default"] = p.default
        description = fields[p.name][2]
        if description is not None:
            prop["description"] = description
        properties[p.name] = prop if p.nullable else prop | kind
    schema: dict[str, Any] = {"additionalProperties": False, "properties": properties}
    required = [p.name for p in plain if p.default is _REQUIRED]
    if required:
        schema["required"] = required
    schema["type"] = "object"
    return schema


def _accept(plain: tuple[_Plain, ...], arguments: Mapping[str, Any]) -> dict[str, Any] | None:
    """The keyword arguments when every argument is already of its parameter's exact type (pydantic
    would hand them back unchanged, an ``int`` for a ``float`` as ``float``), else None."""
    out: dict[str, Any] = {}
    absent = 0
    for p in plain:
        name = p.name
        if name in arguments:
            value = arguments[name]
            if type(value) is p.kind or (value is None and p.nullable):
                out[name] = value
            elif p.kind is float and type(value) is int and -(2**63) <= value <= 2**63:
                out[name] = float(value)
            else:
                return None
        elif p.default is _REQUIRED:
            return None
        else:
            out[name] = p.default
            absent += 1
    return out if len(plain) - absent == len(arguments) else None  # an unknown key: pydantic reports it


def _validation_message(name: str, exc: Any) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error.get("loc", ())) or "arguments"
        problems.append(f"{where}: {error.get('msg')}")
    return f"invalid arguments for {name}: " + "; ".join(problems)


def _undescribable(name: str, fields: Mapping[str, _Param], exc: Exception) -> ArgumentTypeError:
    """The error naming the first parameter whose type pydantic cannot turn into a JSON schema."""
    from pydantic import TypeAdapter

    for param, (annotation, _, _) in fields.items():
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


def _field(param: inspect.Parameter, annotation: Any, doc_text: str | None) -> _Param:
    description = doc_text
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extras = typing.get_args(annotation)
        strings = [e for e in extras if isinstance(e, str)]
        if strings:
            description = strings[0]
            others = [e for e in extras if not isinstance(e, str)]
            annotation = typing.Annotated[(base, *others)] if others else base
    default = _REQUIRED if param.default is inspect.Parameter.empty else param.default
    return annotation, default, description


@dataclass(frozen=True, slots=True)
class _Doc:
    description: str
    params: dict[str, str]


def _parse_doc(text: str) -> _Doc:
    if not text:
        return _Doc("", {})
    if "\n" not in text and ":" not in text and text == text.strip():
        return _Doc(text, {})  # one plain line: what docstring_parser makes of it, without importing it
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
