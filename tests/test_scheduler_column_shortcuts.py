"""The column shortcuts of the scheduler's hot paths give what the plain definitions give:
EASY's bucket bytes made with NumPy are the ``bisect_left`` indices of each value, and a
``Distribution`` partitioned around the ranks it reads has the values a full stable sort
would give, signed zeros and NaN included."""

from __future__ import annotations

import bisect
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dcx.scheduler.metrics import Distribution, percentile
from dcx.scheduler.planners.easy import _LENGTHS, _WIDTHS, _buckets

_BOUNDARIES = [*(float(bound) for bound in _WIDTHS), *_LENGTHS]
values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from(_BOUNDARIES),
    st.sampled_from(_BOUNDARIES).map(lambda bound: math.nextafter(bound, -math.inf)),
    st.sampled_from(_BOUNDARIES).map(lambda bound: math.nextafter(bound, math.inf)),
    st.integers(min_value=0, max_value=2**40).map(float),
)


@given(st.lists(values, max_size=60))
def test_bucket_bytes_are_the_bisect_indices(column: list[float]) -> None:
    for bounds in (_WIDTHS, _LENGTHS):
        assert list(_buckets(bounds, column)) == [bisect.bisect_left(bounds, value)
                                                  for value in column]


def test_bucket_bytes_of_edge_values_and_integer_widths_are_the_bisect_indices() -> None:
    edges = [math.nan, math.inf, -math.inf, -0.0, 0.0, *_BOUNDARIES,
             *(float(width) for width in range(0, 300_000, 7))]
    for bounds in (_WIDTHS, _LENGTHS):
        assert list(_buckets(bounds, edges)) == [bisect.bisect_left(bounds, value)
                                                 for value in edges]


def _sorted_definition(column: list[float]) -> tuple[int, float, float, float, float, float]:
    ordered = sorted(column, key=lambda value: (math.isnan(value), value))  # stable, NaN last
    return (len(ordered), math.fsum(ordered) / len(ordered), percentile(ordered, 50),
            percentile(ordered, 90), percentile(ordered, 99), ordered[-1])


@given(st.integers(min_value=1, max_value=20_000), st.integers(min_value=0, max_value=2**32),
       st.sampled_from(["spread", "ties", "zeros and NaN", "signed zeros"]))
def test_a_distribution_reads_what_a_full_sort_gives(size: int, seed: int, kind: str) -> None:
    # large enough that a partition does not simply sort
    rng = np.random.default_rng(seed)
    column = rng.exponential(1000.0, size)
    if kind == "ties":
        column = np.round(column / 100.0)
    elif kind == "zeros and NaN":
        column = rng.choice(np.array([0.0, -0.0, math.nan, 1.0, -2.0]), size)
    elif kind == "signed zeros":  # the maximum is a zero: which one is the stable sort's
        column = rng.choice(np.array([0.0, -0.0, -1.0]), size)
    found = Distribution.of(column)
    expected = _sorted_definition(column.tolist())
    # repr: NaN equal to NaN, and -0.0 told from 0.0
    assert repr((found.count, found.mean, found.p50, found.p90, found.p99, found.max)) \
        == repr(expected)
