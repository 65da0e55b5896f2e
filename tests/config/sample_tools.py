"""Importable things the configuration tests name by import path."""

from __future__ import annotations

from pydantic import BaseModel


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Answer(BaseModel):
    value: int


def approve_everything(request: object) -> bool:
    return True
