"""Types the fixture graphs keep in their state.

They live in their own module, not in generate.py, so that LangGraph's serde
records them under a stable class path (`fixture_types.Point`) instead of
`__main__.Point`; an importer sees that path in the msgpack extension.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import NamedTuple
from uuid import UUID

import pydantic
import pydantic.v1


class Color(enum.Enum):
    RED = "red"
    GREEN = 2


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 9


@dataclass
class Point:
    x: int
    y: float
    label: str | None = None


@dataclass
class Box:
    corner: Point
    tags: set[str] = field(default_factory=set)
    created: datetime | None = None


class Pair(NamedTuple):
    left: int
    right: str


class Citation(pydantic.BaseModel):
    url: str
    title: str
    retrieved: datetime
    score: Decimal


class Report(pydantic.BaseModel):
    id: UUID
    title: str
    citations: list[Citation]
    color: Color = Color.RED


class LegacyNote(pydantic.v1.BaseModel):
    text: str
    n: int
