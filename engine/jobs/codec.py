"""Events as rows: an event's type name and its fields as JSON, and back to the same typed event.

Every event of `engine.events` is a frozen dataclass of plain values, tuples, dicts and nested
dataclasses (an `EpisodeResult` with its `CheckResult`s and `AgentStep`s); the field types say how
to rebuild each from JSON, so decoding needs no per-event code and a new event type is journaled
as soon as it joins `Event`.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from functools import cache
from typing import Any, Union, get_args, get_origin, get_type_hints

from engine.events import Event

EVENT_TYPES: dict[str, type] = {t.__name__: t for t in get_args(Event)}


class UnknownEvent(ValueError):
    """A stored event of a type this trsi-tui does not know (written by a newer one)."""


def encode(event: Event) -> tuple[str, str]:
    """(type name, JSON payload) of `event`."""
    return type(event).__name__, json.dumps(_plain(event), separators=(",", ":"))


def decode(type_name: str, payload: str) -> Event:
    """The typed event `encode` was given (equal to it, field for field)."""
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        raise UnknownEvent(type_name)
    return _build(cls, json.loads(payload))


def _plain(value: Any) -> Any:
    # dataclasses.asdict would deep-copy every token id first; this only walks.
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)  # each in its own module's names


def _build(cls: type, data: dict) -> Any:
    hints = _hints(cls)
    return cls(**{name: _value(hints[name], v) for name, v in data.items() if name in hints})


def _value(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = get_origin(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _build(hint, value)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        return _value(options[0], value) if len(options) == 1 else value
    if origin is tuple:
        args = get_args(hint)
        inner = args[0] if len(args) == 2 and args[1] is Ellipsis else typing.Any
        return tuple(_value(inner, v) for v in value)
    return value  # str, int, float, bool, Literal, dict: JSON gives them back as they were
