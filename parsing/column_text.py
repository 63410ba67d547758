"""Trace writers' text a column at a time: ``traces.format_number`` of a whole array of
numbers, and text lines joined into one buffer, so that a writer building its lines from a
columnar workload (Arrow string arrays) writes what its object-by-object path writes,
character for character.

numpy and pyarrow are imported inside the functions: format fronts import nothing heavy.
"""

from __future__ import annotations

from typing import Any


def number_texts(values: Any) -> Any:
    """``format_number`` of each value: integers without a decimal point, other floats as
    their shortest repr (those few in Python)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if values.dtype.kind in "iu":
        return pc.cast(pa.array(values.astype(np.int64, copy=False)), pa.string())
    whole = (np.floor(values) == values) & (np.abs(values) < 1e16)
    texts = pc.cast(pa.array(np.where(whole, values, 0).astype(np.int64)), pa.string())
    if not whole.all():
        other = [repr(float(value)) for value in values[~whole]]
        texts = pc.replace_with_mask(texts, pa.array(~whole), pa.array(other, pa.string()))
    return texts


def known_texts(values: Any) -> Any:
    """``number_texts`` where known, ``-1`` where NaN (unknown)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    missing = np.isnan(values)
    return pc.if_else(pa.array(missing), pa.scalar("-1"),
                      number_texts(np.where(missing, 0.0, values)))


def joined_lines(lines: Any) -> bytes:
    """The lines of an Arrow string array, each ending in a newline, as one buffer."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    ended = pc.binary_join_element_wise(lines.cast(pa.large_string()),
                                        pa.scalar("", pa.large_string()),
                                        pa.scalar("\n", pa.large_string()))
    _, offsets, data = ended.buffers()
    bounds = np.frombuffer(offsets, dtype=np.int64)[ended.offset:ended.offset + len(ended) + 1]
    return data.to_pybytes()[int(bounds[0]):int(bounds[-1])] if data is not None else b""
