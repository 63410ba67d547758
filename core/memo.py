"""A function's result kept for the last object it was given, while that object lives.

A conversion asks a format's normal form of one document several times (the refusal check,
``normal_form_losses`` for the losses, the writer): ``last_result`` lets the format compute it
once. The model is frozen, so the same object gives the same result; the entry holds the
object weakly and is dropped with it, so at most one result is kept and none outlives its
document.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

_Key = TypeVar("_Key")
_Result = TypeVar("_Result")


def last_result(function: Callable[[_Key], _Result]) -> Callable[[_Key], _Result]:
    """``function`` remembering its result for the last argument (compared by identity).
    The entry is one tuple, read and replaced whole: threads calling it at once (chunks
    converted on a threads cluster) each get their own argument's result."""
    slot: list[tuple[weakref.ref[Any], Any] | None] = [None]

    def forget(reference: weakref.ref[Any]) -> None:
        held = slot[0]
        if held is not None and held[0] is reference:  # (not a later argument's entry)
            slot[0] = None

    @wraps(function)
    def remembering(argument: _Key) -> _Result:
        held = slot[0]
        if held is not None and held[0]() is argument:
            result: _Result = held[1]
            return result
        result = function(argument)
        try:
            reference = weakref.ref(argument, forget)
        except TypeError:  # an argument that takes no weak reference is not remembered
            return result
        slot[0] = (reference, result)
        return result

    return remembering
