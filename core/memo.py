"""A function's result kept for the last object it was given, while that object lives.

A conversion asks a format's normal form of one document several times (the refusal check,
``normal_form_losses`` for the losses, the writer): ``last_result`` lets the format compute it
once. The model is frozen, so the same object gives the same result; the entry holds the
object weakly and is dropped with it, so at most one result is kept and none outlives its
document.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

_Key = TypeVar("_Key")
_Result = TypeVar("_Result")


def last_result(function: Callable[[_Key], _Result]) -> Callable[[_Key], _Result]:
    """``function`` remembering its result for the last argument (compared by identity)."""
    entry: list[Any] = []  # [weak reference to the argument, result] or empty

    def forget(reference: object) -> None:
        if entry and entry[0] is reference:  # (not a later argument's entry)
            entry.clear()

    @wraps(function)
    def remembering(argument: _Key) -> _Result:
        if entry and entry[0]() is argument:
            result: _Result = entry[1]
            return result
        result = function(argument)
        entry.clear()
        # an argument that takes no weak reference is not remembered
        with contextlib.suppress(TypeError):
            entry.extend((weakref.ref(argument, forget), result))
        return result

    return remembering
