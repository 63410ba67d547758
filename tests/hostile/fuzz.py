"""Fuzz every reader with mutated real files for a bounded time; any traceback is a failure.

Run by ``nox -s fuzz`` as ``python tests/hostile/fuzz.py --seconds N`` and, for a short
while, by the test suite. Seeds are the repository's ``examples/``, the committed hostile
cases and the shared corpus when it is present (``DCX_CORPUS`` or ``../shared/corpus``);
files over ``MAX_SEED_BYTES`` are left out so each example stays quick.

Hypothesis drives the mutations (flips, inserts of bytes and of syntax that matters to our
formats, deletions, duplications, truncations, splices of two seeds) and shrinks a failing
input before reporting it. Every format's ``sniff`` and ``read`` run on each input,
and ``read_any`` (content detection) too. Besides exceptions, the reader contract is
checked: a ``ReadResult``; no document means at least one error; every diagnostic has a
code. A failure prints the traceback, writes the shrunk input to ``--crash-dir`` and exits 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from dcx.converters.convert import read_any
from dcx.converters.registry import FORMATS
from dcx.core.declaration import FormatDeclaration
from dcx.core.diagnostics import ReadResult, has_errors

REPO = Path(__file__).resolve().parents[2]
HOSTILE_DIR = Path(__file__).resolve().parent
MAX_SEED_BYTES = 200_000
BATCH_EXAMPLES = 100
"""Hypothesis examples per batch; the time budget is checked between batches."""

SYNTAX_TOKENS: tuple[bytes, ...] = (
    b"{", b"}", b"[", b"]", b'"', b":", b",", b"\\", b"\\u", b"\\ud800", b"NaN", b"-0", b"1e400",
    b"9" * 30, b'"$base": "#/"', b'"$base": "#/environment"', b'"$merge": ["cpus"]', b"null",
    b"<", b">", b"</", b"/>", b"&", b"&amp;", b"&#0;", b"<![CDATA[", b"]]>", b"<!--", b"-->",
    b"<?xml version='1.0'?>", b"<!DOCTYPE x [", b"xmlns:a='u'", b"a:", b"\x00", b"\xff",
    b"\xef\xbb\xbf", b"\r\n", b"\n", b"\t", b" ", b"-1", b"0", b"4294967296", b"[0-99999999]",
    b"node[1-3,5]", b"0-4294967296", b"#", b";", b"WorkflowID",
    "\u00e9".encode(),
)


@dataclass(frozen=True)
class Failure:
    what: str
    data: bytes
    detail: str


class ContractError(AssertionError):
    """A reader broke the ``ReadResult`` contract without raising."""


def seed_files(corpus: Path | None) -> list[Path]:
    roots = [REPO / "examples", HOSTILE_DIR / "xml", HOSTILE_DIR / "json", HOSTILE_DIR / "formats"]
    if corpus is not None and corpus.is_dir():
        roots.append(corpus)
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and 0 < path.stat().st_size <= MAX_SEED_BYTES \
                    and not path.name.endswith(".md"):
                found.append(path)
    return found


def _position(data: bytes, raw: int) -> int:
    return raw % (len(data) + 1)


def mutation(seeds: list[bytes]) -> st.SearchStrategy[Callable[[bytes], bytes]]:
    position = st.integers(min_value=0, max_value=1 << 24)
    length = st.integers(min_value=1, max_value=4096)

    def flip(p: int, byte: int) -> Callable[[bytes], bytes]:
        def apply(data: bytes) -> bytes:
            if not data:
                return bytes([byte])
            at = p % len(data)
            return data[:at] + bytes([byte]) + data[at + 1:]
        return apply

    def insert(p: int, chunk: bytes) -> Callable[[bytes], bytes]:
        return lambda data: data[:_position(data, p)] + chunk + data[_position(data, p):]

    def delete(p: int, n: int) -> Callable[[bytes], bytes]:
        return lambda data: data[:_position(data, p)] + data[_position(data, p) + n:]

    def duplicate(p: int, n: int) -> Callable[[bytes], bytes]:
        def apply(data: bytes) -> bytes:
            at = _position(data, p)
            return data[:at] + data[at:at + n] * 2 + data[at + n:]
        return apply

    def truncate(p: int) -> Callable[[bytes], bytes]:
        return lambda data: data[:_position(data, p)]

    def splice(index: int, p: int, q: int) -> Callable[[bytes], bytes]:
        other = seeds[index % len(seeds)]
        return lambda data: data[:_position(data, p)] + other[_position(other, q):]

    return st.one_of(
        st.builds(flip, position, st.integers(0, 255)),
        st.builds(insert, position, st.sampled_from(SYNTAX_TOKENS)),
        st.builds(insert, position, st.binary(min_size=1, max_size=16)),
        st.builds(delete, position, length),
        st.builds(duplicate, position, length),
        st.builds(truncate, position),
        st.builds(splice, st.integers(0, 1 << 16), position, position),
    )


def check_reader(spec: FormatDeclaration, data: bytes) -> None:
    spec.sniff(data)
    result = spec.read(data)
    check_result(spec.name, result)


def check_result(name: str, result: object) -> None:
    if not isinstance(result, ReadResult):
        raise ContractError(f"{name}.read returned {type(result).__name__}, not ReadResult")
    if result.document is None and not has_errors(result.diagnostics):
        raise ContractError(f"{name}.read returned no document and no error")
    for diagnostic in result.diagnostics:
        if not diagnostic.code:
            raise ContractError(f"{name}: diagnostic without a code: {diagnostic.render()}")


def fuzz(seconds: float, corpus: Path | None, crash_dir: Path) -> int:
    specs = FORMATS
    paths = seed_files(corpus)
    seeds = [path.read_bytes() for path in paths]
    if not seeds:
        print("fuzz: no seed files found", file=sys.stderr)
        return 2
    failures: list[Failure] = []
    inputs = 0

    @settings(max_examples=BATCH_EXAMPLES, deadline=None, database=None, print_blob=True,
              phases=(Phase.generate, Phase.shrink),
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(range(len(seeds))), st.lists(mutation(seeds), min_size=1, max_size=6))
    def one_input(seed_index: int, mutations: list[Callable[[bytes], bytes]]) -> None:
        nonlocal inputs
        data = seeds[seed_index]
        for mutate in mutations:
            data = mutate(data)
        inputs += 1
        for spec in specs:
            try:
                check_reader(spec, data)
            except Exception as exc:
                last[0] = Failure(f"{spec.name} on a mutation of {paths[seed_index]}", data,
                                  "".join(traceback.format_exception(exc)))
                raise
        try:
            _, result = read_any(data, str(paths[seed_index]))
            check_result("read_any", result)
        except Exception as exc:
            last[0] = Failure(f"read_any on a mutation of {paths[seed_index]}", data,
                              "".join(traceback.format_exception(exc)))
            raise

    last: list[Failure | None] = [None]
    deadline = time.monotonic() + seconds
    batches = 0
    while time.monotonic() < deadline:
        batches += 1
        try:
            one_input()
        except Exception:
            if last[0] is not None:
                failures.append(last[0])
            break
    print(f"fuzz: {inputs:,} inputs over {len(specs)} readers from {len(seeds)} seeds in "
          f"{seconds:.0f} s ({batches} batches)", file=sys.stderr)
    for failure in failures:
        crash_dir.mkdir(parents=True, exist_ok=True)
        target = crash_dir / f"crash-{abs(hash(failure.data)):x}.bin"
        target.write_bytes(failure.data)
        print(f"fuzz: FAILURE in {failure.what}; shrunk input saved to {target}\n"
              f"{failure.detail}", file=sys.stderr)
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="time budget (default 60)")
    default_corpus = Path(os.environ.get("DCX_CORPUS", REPO.parent / "shared" / "corpus"))
    parser.add_argument("--corpus", type=Path, default=default_corpus,
                        help="extra seed folder (default: DCX_CORPUS or ../shared/corpus)")
    parser.add_argument("--crash-dir", type=Path, default=REPO / "build" / "fuzz-crashes")
    args = parser.parse_args()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    raise SystemExit(fuzz(args.seconds, args.corpus, args.crash_dir))


if __name__ == "__main__":
    main()
