"""Strict tools and outputs on OpenAI: the schema is rewritten into the form strict mode accepts."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel

from tooloop import tool
from tooloop.models.openai_chat.schema import strict_schema


class Size(Enum):
    SMALL = "small"
    LARGE = "large"


class Address(BaseModel):
    street: str
    city: str | None = None


def _objects(schema: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            found.append(schema)
        for value in schema.values():
            found += _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            found += _objects(value)
    return found


def test_every_object_requires_all_properties_and_forbids_others() -> None:
    @tool(strict=True)
    def ship(to: Address, size: Size = Size.SMALL, express: bool = False, note: str | None = None) -> str:
        """Ship a parcel."""
        return "ok"

    schema = strict_schema(ship.parameters)
    objects = _objects(schema)
    assert len(objects) == 2  # the parameters and the Address model
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    assert "default" not in str(schema)


def test_optional_parameters_become_nullable_and_required_ones_do_not() -> None:
    schema = strict_schema(
        {
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "b": {"type": "integer", "default": 3},
                "c": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "d": {"$ref": "#/$defs/D"},
            },
            "required": ["a"],
            "$defs": {"D": {"type": "object", "properties": {"x": {"type": "string"}}}},
        }
    )
    props = schema["properties"]
    assert props["a"] == {"type": "integer"}
    assert props["b"] == {"type": ["integer", "null"]}
    assert props["c"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert props["d"] == {"anyOf": [{"$ref": "#/$defs/D"}, {"type": "null"}]}
    assert schema["$defs"]["D"]["required"] == ["x"] and schema["$defs"]["D"]["additionalProperties"] is False
    assert schema["required"] == ["a", "b", "c", "d"]
