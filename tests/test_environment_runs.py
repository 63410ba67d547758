"""Environment JSON reads a run of rack units of one kind (one definition, the same arrays,
differing only in id and name) as one machine group without building each machine: the
same document and diagnostics as building every unit and compacting afterwards."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcx.core.diagnostics import ReadResult
from dcx.core.groups import MachineGroup, machine_parts
from dcx.formats import environment
from dcx.formats.environment import reader

DEFINITIONS = {
    "small": {"type": "MACHINE", "cpus": [{"clock-rate": 2.4e9, "cores": 8}]},
    "big": {"type": "MACHINE", "cpus": [{"clock-rate": 3.0e9, "cores": 32}],
            "memory": [{"capacity": 65536}]},
}
UNIT_CHOICES = (
    lambda n: {"name": f"s{n}", "$base": "#/definitions/small"},
    lambda n: {"name": f"s{n}", "id": f"m{n}", "$base": "#/definitions/small"},
    lambda n: {"id": n, "$base": "#/definitions/big"},
    lambda n: {"name": f"b{n}", "state": "HALT", "$base": "#/definitions/big"},
    lambda n: {"name": f"w{n}", "type": "MACHINE", "cpus": [{"clock-rate": 2.4e9, "cores": 8}]},
    lambda n: {"name": f"u{n}", "colour": "red", "$base": "#/definitions/small"},
    lambda n: {"type": "EMPTY"},
    lambda n: {"name": "dup", "$base": "#/definitions/small"},
    lambda n: {"name": f"a{n}", "state": "ACTIVE", "$base": "#/definitions/big"},
    lambda n: {"name": f"c{n}", "cpus": [{"clock-rate": 1e9, "cores": 8}],
               "$base": "#/definitions/small"},
)


def document(choices: list[int]) -> bytes:
    units = [UNIT_CHOICES[choice](index) for index, choice in enumerate(choices)]
    return json.dumps({
        "environment": {"datacenters": [{"rooms": [{"type": "SERVER", "objects": [
            {"type": "RACK", "units": units}]}]}]},
        "definitions": DEFINITIONS}).encode()


def read_unit_by_unit(data: bytes, monkeypatch: pytest.MonkeyPatch) -> ReadResult:
    """The read with every unit built on its own (then compacted), as before runs."""
    with monkeypatch.context() as patch:
        patch.setattr(reader._UnitKind, "of", staticmethod(lambda unit, bases: None))
        return environment.read(data)


def agree(choices: list[int], monkeypatch: pytest.MonkeyPatch) -> ReadResult:
    data = document(choices)
    runs = environment.read(data)
    single = read_unit_by_unit(data, monkeypatch)
    assert runs.document == single.document
    assert [repr(d) for d in runs.diagnostics] == [repr(d) for d in single.diagnostics]
    if runs.document is not None:
        assert single.document is not None
        assert environment.write(runs.document).data == environment.write(single.document).data
    return runs


def test_a_run_of_one_definition_is_one_group_and_reads_as_before(monkeypatch):
    result = agree([0] * 5 + [6] + [2] * 3 + [5, 5] + [4, 4], monkeypatch)
    assert result.document is not None and result.document.environment is not None
    parts = list(machine_parts(result.document.environment))
    groups = [part for part in parts if isinstance(part, MachineGroup)]
    assert [group.count for group in groups][:2] == [5, 3]
    assert groups[1].ids == range(6, 9)
    assert groups[0].names == ("s0", "s1", "s2", "s3", "s4")


def test_repeated_names_and_unknown_keys_are_reported_as_before(monkeypatch):
    agree([7, 7, 7, 5, 5, 5, 5, 5, 5, 5], monkeypatch)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.integers(1, 40))
def test_generated_racks_read_as_unit_by_unit(seed, size):
    rng = random.Random(seed)
    choices: list[int] = []
    while len(choices) < size:
        choices += [rng.randrange(len(UNIT_CHOICES))] * rng.choice((1, 1, 2, 5))
    with pytest.MonkeyPatch.context() as monkeypatch:
        agree(choices[:size], monkeypatch)
