"""Reading a run's values: one rule for a knob of a run's context and a field of the
retrieval policy, whether it comes typed (the Python API) or as text (the CLI's ``--set``,
the SDK's JSON)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, get_args, get_origin


class KnobTypeError(ValueError):
    """A knob's value is not of the knob's type, nor a string that reads as one."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


_TRUE, _FALSE = ("true", "1"), ("false", "0")


def read_knob(hint: Any, value: object) -> object:
    """``value`` as a knob of type ``hint`` (``bool``, ``int``, ``float``, ``str``, an
    optional ``str``, a ``Literal`` of strings or ``dict[str, float]``), or
    :class:`KnobTypeError` naming the type expected.

    One rule for the CLI's ``--set`` and for contexts built from a mapping (the SDK's
    JSON): a value of the type passes (an ``int`` for a ``float`` too), and so does a
    string that plainly reads as one ("false", "0", "3", "0.2"); nothing else is guessed
    (a ``bool`` is no number, a ``float`` no ``int``).
    """
    if get_origin(hint) is dict:
        return _read_weights(value)
    raw = value.strip().lower() if isinstance(value, str) else None
    if hint is bool:
        if isinstance(value, bool):
            return value
        if raw in _TRUE or raw in _FALSE:
            return raw in _TRUE
        raise KnobTypeError("true or false")
    if hint is int or hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            if hint is float:
                return float(value)
            if isinstance(value, int):
                return value
        elif raw is not None:
            try:
                return hint(raw)
            except ValueError:
                pass
        raise KnobTypeError(hint.__name__)
    if get_origin(hint) is Literal:
        if value in get_args(hint):
            return value
        raise KnobTypeError("one of " + ", ".join(repr(v) for v in get_args(hint)))
    optional = hint == (str | None)
    if isinstance(value, str) or (optional and value is None):
        return value
    raise KnobTypeError("str or null" if optional else "str")


def _read_weights(value: object) -> dict[str, float]:
    """A mapping of names to numbers (a fitted model's weights), given as one or as its
    JSON text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise KnobTypeError("a JSON object of names to numbers") from None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
        for k, v in value.items()
    ):
        raise KnobTypeError("an object of names to numbers")
    return {k: float(v) for k, v in value.items()}
