"""How far a sweep is: on a terminal a bar with the failures and the time left; otherwise
(CI logs, batch jobs, ``nohup``) one line every ``every_s`` seconds, and one when a cluster
loses its last worker or gets one back."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, TextIO

from dcx.converters.progress import rich_bar


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def duration_text(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 10 min``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class SweepProgress:
    """Cells done of ``total``, failures, elapsed time and an estimate of the time left."""

    def __init__(self, total: int, label: str, every_s: float = 10.0,
                 stream: TextIO | None = None, bar: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = total
        self.label = label
        self.every_s = every_s
        self.done = 0
        self.failed = 0
        self.began = time.monotonic()
        self._last_line = self.began
        self._bar_wanted = _is_terminal(self.stream) if bar is None else bar
        self._bar: Any = None
        self._task: Any = None
        self._first_at: float | None = None

    def __enter__(self) -> SweepProgress:
        if self._bar_wanted and self.total:
            self._bar = rich_bar(self.stream, failures=True, eta=True)
            self._task = self._bar.add_task(self.label, total=self.total, failed="")
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def eta_s(self) -> float | None:
        """The time left at the rate since the first cell came back (the cluster's start
        is not a cell's cost); from the start while only one has."""
        if not self.done:
            return None
        now = time.monotonic()
        if self.done >= 2 and self._first_at is not None and now > self._first_at:
            return (now - self._first_at) / (self.done - 1) * (self.total - self.done)
        return (now - self.began) / self.done * (self.total - self.done)

    def line(self) -> str:
        eta = self.eta_s()
        text = f"{self.label}: {self.done}/{self.total} cell(s) done"
        if self.failed:
            text += f", {self.failed} failed"
        text += f", {duration_text(time.monotonic() - self.began)} elapsed"
        text += f", ETA {duration_text(eta)}" if eta is not None else ", ETA unknown"
        return text

    def advance(self, failed: bool = False) -> None:
        if not self.done:
            self._first_at = time.monotonic()
        self.done += 1
        self.failed += failed
        if self._bar is not None:
            self._bar.update(self._task, advance=1,
                             failed=f"{self.failed} failed" if self.failed else "")
        else:
            self.tick()

    def tick(self) -> None:
        """Off a terminal: a line when ``every_s`` has passed since the last one."""
        if self._bar is not None or not self.total:
            return
        now = time.monotonic()
        if now - self._last_line >= self.every_s and self.done < self.total:
            self._last_line = now
            self.say(self.line())

    def workers(self, before: int, now: int) -> None:
        """The cluster lost its last worker (``now`` 0) or has one again."""
        left = self.total - self.done
        if now == 0 and before < 0:
            self.say(f"{self.label}: the cluster has no workers yet; waiting for one ({left} "
                     "cell(s) to run)")
        elif now == 0:
            self.say(f"{self.label}: the cluster has no workers; waiting for one ({left} "
                     "cell(s) left; cells that were running will run again)")
        else:
            self.say(f"{self.label}: {now} worker(s) on the cluster; going on ({left} "
                     "cell(s) left)")

    def say(self, line: str) -> None:
        if self._bar is not None:
            self._bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            print(line, file=self.stream, flush=True)
