"""Progress bars on stderr for long runs: many files, or one large input.

Only when stderr is a terminal (CI logs and pre-commit get nothing) and the run is long enough
to need one; rich is imported only then, so a hook batch never pays for it. While a bar is
shown, messages go through ``say`` so they print above the bar instead of through it.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, TextIO

LARGE_INPUT_BYTES = 4 * 1024 * 1024
"""Inputs from this size on show their stages (reading, checking, converting, writing)."""


def rich_bar(stream: TextIO, failures: bool = False, eta: bool = False) -> Any:
    """A started, transient rich bar on ``stream`` (description, bar, done of total, time
    taken; with ``failures`` the task's ``failed`` field, with ``eta`` the time left).
    Diagnostics printed through its console keep their text: no markup, emoji codes or
    highlighting."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as RichProgress

    columns: list[ProgressColumn | str] = [TextColumn("{task.description}"), BarColumn(),
                                           MofNCompleteColumn()]
    if failures:
        columns.append(TextColumn("{task.fields[failed]}"))
    columns.append(TimeElapsedColumn())
    if eta:
        columns += [TextColumn("ETA"), TimeRemainingColumn()]
    console = Console(file=stream, highlight=False, markup=False, emoji=False)
    bar = RichProgress(*columns, console=console, transient=True)
    bar.start()
    return bar


class Progress:
    """A bar of ``total`` steps, or nothing when ``enabled`` is false or stderr is no terminal."""

    def __init__(self, total: int, description: str = "", *, enabled: bool = True,
                 stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = total
        self.enabled = enabled and total > 0 and _is_terminal(self.stream)
        self._bar: Any = None
        self._task: Any = None
        self._description = description

    def __enter__(self) -> Progress:
        if self.enabled:
            self._bar = rich_bar(self.stream)
            self._task = self._bar.add_task(self._description, total=self.total)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def advance(self, description: str | None = None) -> None:
        """One step done; ``description`` names what comes next."""
        if self._bar is not None:
            self._bar.update(self._task, advance=1,
                             description=description if description is not None
                             else self._description)

    def describe(self, description: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=description)

    def say(self, line: str) -> None:
        """Print one line on the stream, above the bar when one is shown."""
        if self._bar is not None:
            self._bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            print(line, file=self.stream)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False
