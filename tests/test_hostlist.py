"""RFC 22 idset and RFC 29 hostlist codecs: grammar, limits, canonical forms, round trips."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dcx.parsing.hostlist import (
    CODES,
    MAX_BRACKET_ELEMENTS,
    MAX_HOSTS_PER_RANGE,
    MAX_ID,
    Hostlist,
    HostlistError,
    IdSet,
    IdsetError,
)

# --------------------------------------------------------------------------- idset


@pytest.mark.parametrize(
    ("text", "canonical", "count"),
    [
        ("", "", 0),
        ("[]", "", 0),
        ("1,2,3,5,6,42", "1-3,5-6,42", 6),
        ("[0-3]", "0-3", 4),
        ("1-3,4", "1-4", 4),
        ("2147483647", "2147483647", 1),
        ("0-2147483646", "0-2147483646", 2147483647),
        ("0,2,4", "0,2,4", 3),
    ],
)
def test_idset_decodes_to_canonical_form(text: str, canonical: str, count: int) -> None:
    ids = IdSet.decode(text)
    assert ids.encode() == canonical
    assert len(ids) == count


@pytest.mark.parametrize(
    ("text", "position", "reason"),
    [
        ("1,,2", 2, "empty element"),
        (",1", 0, "empty element"),
        ("3-1", 0, "does not ascend"),
        ("3-3", 0, "does not ascend"),
        ("1,1", 2, "out of order"),
        ("3,1", 2, "out of order"),
        ("1-3,2-5", 4, "out of order"),
        ("01", 0, "leading zero"),
        ("007", 0, "leading zero"),
        (" 1", 0, "whitespace"),
        ("1 ", 1, "whitespace"),
        ("1, 2", 2, "whitespace"),
        ("[1-3", 0, "brackets"),
        ("1-3]", 3, "brackets"),
        ("[[1]]", 1, "brackets"),
        ("-1", 0, "'-' must join"),
        ("+1", 0, "'+'"),
        ("1-", 2, "ends where an id is expected"),
        ("1e3", 1, "'e'"),
        ("0x10", 1, "'x'"),
        ("٣", 0, "not allowed"),
        ("2147483648", 0, "exceeds the maximum"),
        ("4294967296", 0, "exceeds the maximum"),
        ("0-4294967297", 2, "exceeds the maximum"),
        ("18446744073709551616", 0, "exceeds the maximum"),
        ("1" * 5000, 0, "exceeds the maximum"),
    ],
)
def test_idset_errors_name_position_and_reason(text: str, position: int, reason: str) -> None:
    with pytest.raises(IdsetError) as caught:
        IdSet.decode(text)
    assert caught.value.position == position
    assert reason in caught.value.reason


def test_idset_queries_do_not_expand() -> None:
    ids = IdSet.decode("0-2147483646")
    assert ids.range_count == 1
    assert 2147483646 in ids
    assert 2147483647 not in ids
    assert ids.index(1000) == 1000
    assert ids.nth(2147483646) == 2147483646


def test_idset_index_and_nth_over_several_ranges() -> None:
    ids = IdSet.decode("3,5-7,100")
    assert [ids.index(v) for v in (3, 5, 6, 7, 100)] == [0, 1, 2, 3, 4]
    assert [ids.nth(i) for i in range(5)] == [3, 5, 6, 7, 100]
    with pytest.raises(ValueError):
        ids.index(4)
    with pytest.raises(IndexError):
        ids.nth(5)


def test_idset_brackets_only_for_more_than_one_member() -> None:
    assert IdSet.decode("5").encode(brackets=True) == "5"
    assert IdSet.decode("0-3,5,7-8").encode(brackets=True) == "[0-3,5,7-8]"


def test_idset_union_and_disjointness() -> None:
    left, right = IdSet.decode("0-3"), IdSet.decode("4-5,9")
    assert left.union(right).encode() == "0-5,9"
    assert left.isdisjoint(right)
    assert not left.isdisjoint(IdSet.decode("3"))


def test_idset_from_ids_rejects_out_of_range() -> None:
    with pytest.raises(ValueError):
        IdSet.from_ids([MAX_ID + 1])
    with pytest.raises(ValueError):
        IdSet.from_ids([-1])


id_lists = st.lists(st.integers(min_value=0, max_value=MAX_ID), max_size=40)


@given(id_lists)
def test_idset_round_trip_is_exact(values: list[int]) -> None:
    ids = IdSet.from_ids(values)
    assert list(ids) == sorted(set(values))
    assert len(ids) == len(set(values))
    text = ids.encode()
    again = IdSet.decode(text)
    assert again == ids
    assert again.encode() == text
    assert IdSet.decode(ids.encode(brackets=True)) == ids


@given(id_lists)
def test_idset_encoding_is_canonical(values: list[int]) -> None:
    """No two consecutive ids are written as separate elements."""
    text = IdSet.from_ids(values).encode()
    elements = [e for e in text.split(",") if e]
    for before, after in itertools.pairwise(elements):
        assert int(after.split("-")[0]) > int(before.split("-")[-1]) + 1


# --------------------------------------------------------------------------- hostlist


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("", []),
        ("[1-3,5-6]", ["1", "2", "3", "5", "6"]),
        ("foo[0-2]-eth2", ["foo0-eth2", "foo1-eth2", "foo2-eth2"]),
        ("[00-02]", ["00", "01", "02"]),
        ("[00-2]", ["00", "01", "02"]),
        ("foo[1,1,2,1]", ["foo1", "foo1", "foo2", "foo1"]),
        ("node[1-010]", [f"node{i}" for i in range(1, 11)]),
        ("node[005,4,11-12]", ["node005", "node4", "node11", "node12"]),
        ("node[9-11]", ["node9", "node10", "node11"]),
        ("node[09-11]", ["node09", "node10", "node11"]),
        ("node-1", ["node-1"]),
        ("node[1-2].example.com", ["node1.example.com", "node2.example.com"]),
        ("node,node", ["node", "node"]),
        ("n99999999999999999999", ["n99999999999999999999"]),
        ("compute-01", ["compute-01"]),
    ],
)
def test_hostlist_decodes_rfc29_examples(text: str, hosts: list[str]) -> None:
    assert list(Hostlist.decode(text)) == hosts


@pytest.mark.parametrize(
    ("hosts", "encoded"),
    [
        (["node001", "node002"], "node[001-002]"),
        (["foo1", "foo1", "foo1"], "foo[1,1,1]"),
        (["node1", "node2", "node3", "node2"], "node[1-3,2]"),
        (["node7", "node007"], "node[7,007]"),
        (["n8", "n9", "n10", "n010"], "n[8-10,010]"),
        (["node3", "node0", "node1", "node2"], "node[3,0-2]"),
        (["node186"], "node186"),
        (["a", "b1", "b2", "c"], "a,b[1-2],c"),
        (["n99", "n100"], "n[99-100]"),
        (["n09", "n10"], "n[09-10]"),
        (["n9", "n010"], "n[9,010]"),
        (["node1.example.com", "node2.example.com"], "node[1-2].example.com"),
    ],
)
def test_hostlist_encoder_is_canonical(hosts: list[str], encoded: str) -> None:
    hostlist = Hostlist.from_hosts(hosts)
    assert hostlist.encode() == encoded
    assert list(Hostlist.decode(encoded)) == hosts


@pytest.mark.parametrize(
    ("text", "position", "reason"),
    [
        ("rack[1-2]node[1-3]", 13, "more than one bracket group"),
        ("node1 node2", 5, "whitespace"),
        ("node1\tnode2", 5, "whitespace"),
        (",node1", 0, "empty host name"),
        ("node1,", 6, "empty host name"),
        ("node1,,node2", 6, "empty host name"),
        ("node[3-1]", 5, "descends"),
        ("node[010-9]", 5, "descends"),
        ("node[]", 5, "empty brackets"),
        ("node[1-3", 4, "never closed"),
        ("node1-3]", 7, "without '['"),
        ("node[-1]", 5, "'-' must join"),
        ("node[1--3]", 6, "'-' must join"),
        ("node[+1]", 5, "'+'"),
        ("node[ 1]", 5, "whitespace"),
        ("n[0-1048576]", 2, "more than 1,048,576 hosts"),
        ("n[18446744073709551616]", 2, "exceeds"),
        ("héllo1", 1, "not printable ASCII"),
        ("node[[1]]", 5, "nested"),
    ],
)
def test_hostlist_errors_name_position_and_reason(text: str, position: int, reason: str) -> None:
    with pytest.raises(HostlistError) as caught:
        Hostlist.decode(text)
    assert caught.value.position == position
    assert reason in caught.value.reason


def test_hostlist_largest_range_is_not_expanded() -> None:
    hosts = Hostlist.decode(f"n[0-{MAX_HOSTS_PER_RANGE - 1}]")
    assert len(hosts) == MAX_HOSTS_PER_RANGE
    assert hosts[MAX_HOSTS_PER_RANGE - 1] == f"n{MAX_HOSTS_PER_RANGE - 1}"
    assert hosts[-1] == hosts[MAX_HOSTS_PER_RANGE - 1]
    assert hosts.encode() == f"n[0-{MAX_HOSTS_PER_RANGE - 1}]"


def test_hostlist_merging_never_builds_an_undecodable_range() -> None:
    hosts = Hostlist.decode(f"n[0-{MAX_HOSTS_PER_RANGE - 1}],n{MAX_HOSTS_PER_RANGE}")
    assert len(Hostlist.decode(hosts.encode())) == MAX_HOSTS_PER_RANGE + 1


def test_hostlist_indexing_and_concatenation() -> None:
    joined = Hostlist.decode("a[1-3]") + Hostlist.decode("a[4-5],b")
    assert joined.encode() == "a[1-5],b"
    assert [joined[i] for i in range(len(joined))] == ["a1", "a2", "a3", "a4", "a5", "b"]
    with pytest.raises(IndexError):
        joined[6]


def test_from_hosts_rejects_names_a_hostlist_cannot_spell() -> None:
    for bad in ("", "a b", "a,b", "a[1]", "é"):
        with pytest.raises(HostlistError):
            Hostlist.from_hosts([bad])


_AFFIX = st.text(alphabet="abcxyz-._", min_size=0, max_size=4)
_NUMBER = st.integers(min_value=0, max_value=10**6).flatmap(
    lambda n: st.integers(min_value=len(str(n)), max_value=8).map(lambda w: str(n).zfill(w))
)
_HOST = st.one_of(
    st.builds(lambda p, n, s: p + n + s, _AFFIX, _NUMBER, _AFFIX),
    st.text(alphabet="abcxyz-._", min_size=1, max_size=6),
).filter(bool)


@given(st.lists(_HOST, max_size=30))
def test_hostlist_round_trip_keeps_order_duplicates_and_padding(hosts: list[str]) -> None:
    encoded = Hostlist.from_hosts(hosts).encode()
    decoded = Hostlist.decode(encoded)
    assert list(decoded) == hosts
    assert len(decoded) == len(hosts)
    assert decoded.encode() == encoded  # idempotent


@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 20), st.integers(1, 4)),
                min_size=1, max_size=6))
def test_hostlist_bracket_ranges_round_trip(spec: list[tuple[int, int, int]]) -> None:
    inner = ",".join(
        str(lo).zfill(width) if span == 0 else f"{str(lo).zfill(width)}-{lo + span}"
        for lo, span, width in spec
    )
    text = f"node[{inner}]"
    decoded = Hostlist.decode(text)
    expected = [f"node{str(v).zfill(w)}" for lo, span, w in spec for v in range(lo, lo + span + 1)]
    assert list(decoded) == expected
    assert list(Hostlist.decode(decoded.encode())) == expected


def test_encoder_splits_a_bracket_longer_than_flux_core_reads() -> None:
    """flux-core's libhostlist refuses more than 10,240 elements in one bracket
    (``MAX_RANGES``): the encoder writes several groups sharing the prefix and suffix."""
    hosts = [f"n{i}.x" for i in range(0, 2 * (2 * MAX_BRACKET_ELEMENTS + 5), 2)]
    encoded = Hostlist.from_hosts(hosts).encode()
    groups = encoded.split(".x,")
    assert len(groups) == 3
    assert all(group.startswith("n[") for group in groups)
    assert [group.count(",") + 1 for group in groups] == [MAX_BRACKET_ELEMENTS,
                                                          MAX_BRACKET_ELEMENTS, 5]
    assert encoded.endswith("].x") and encoded.count("].x") == 3
    decoded = Hostlist.decode(encoded)
    assert list(decoded) == hosts
    assert decoded.encode() == encoded


def test_exactly_the_bracket_limit_stays_one_group() -> None:
    hosts = [f"n{i}" for i in range(0, 2 * MAX_BRACKET_ELEMENTS, 2)]
    encoded = Hostlist.from_hosts(hosts).encode()
    assert encoded.count("[") == 1
    assert list(Hostlist.decode(encoded)) == hosts


def test_decoder_refuses_a_bracket_longer_than_flux_core_reads() -> None:
    inner = ",".join(str(i) for i in range(0, 2 * (MAX_BRACKET_ELEMENTS + 1), 2))
    text = f"n[{inner}]"
    with pytest.raises(HostlistError) as raised:
        Hostlist.decode(text)
    assert "10,240 elements" in raised.value.reason
    # the position is the first element beyond the limit
    assert text[raised.value.position:] == str(2 * MAX_BRACKET_ELEMENTS) + "]"


def test_a_bracket_reaching_the_largest_number_before_a_suffix_is_refused() -> None:
    """flux-core expands such a bracket with a counter that wraps from 2**64-1 to 0 and
    never stops; the encoder writes those hosts without brackets instead."""
    top = (1 << 64) - 1
    with pytest.raises(HostlistError, match="never finishes"):
        Hostlist.decode(f"n[{top - 1}-{top}]x")
    assert list(Hostlist.decode(f"n[{top - 1}-{top}]")) == [f"n{top - 1}", f"n{top}"]
    hosts = [f"n{top - 1}x", f"n{top}x", "n7x"]
    encoded = Hostlist.from_hosts(hosts).encode()
    assert f"{top}]" not in encoded
    assert list(Hostlist.decode(encoded)) == hosts


def test_hostlist_codes_are_declared_empty_because_formats_report_them() -> None:
    assert CODES == ()
