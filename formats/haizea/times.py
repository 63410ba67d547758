"""Haizea's time grammar: deltas as mx.DateTime reads them (strictly: the whole string, in
the forms Haizea writes or documents), Haizea's own ``[D:]HH:MM:SS.ss`` output form, and the
absolute times of standalone leases."""

from __future__ import annotations

import datetime as _dt
import re
from functools import lru_cache

# re.ASCII: Haizea's grammar has ASCII digits only (\d would also take other scripts' digits)
_CLOCK = re.compile(r"(?:(\d+):)?(\d\d):(\d\d):(\d\d)\.(\d\d)", re.ASCII)
"""Haizea's own ``[D:]HH:MM:SS.ss``: the form of nearly every time in real files."""
_DHMS = re.compile(r"([+-])?(\d+):(\d+):(\d+):(\d+)(?:\.(\d+))?", re.ASCII)
_HMS = re.compile(r"([+-])?(?:(\d+)d\s*)?(\d+):(\d+)(?::(\d+)(?:\.(\d+))?)?", re.ASCII)
_UNITS = re.compile(
    r"(?=\d)(?:(\d+(?:\.\d+)?)d\s*)?(?:(\d+(?:\.\d+)?)h\s*)?"
    r"(?:(\d+(?:\.\d+)?)m\s*)?(?:(\d+(?:\.\d+)?)s)?", re.ASCII
)
_BARE_NUMBER = re.compile(r"[+-]?\d+(?:[.,]\d+)?", re.ASCII)
_ISO_DATE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}(?:[ T]|$)", re.ASCII)
_ABSOLUTE = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?",
    re.ASCII,
)


class TimeSyntaxError(ValueError):
    """A time string outside the grammar; ``hint`` says what Haizea would have made of it."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def _seconds(whole: int, fraction: str | None) -> float:
    """Exact to 0.01 s: ``c / 100`` for two fraction digits, so written values read back
    bit for bit."""
    if not fraction:
        return float(whole)
    if len(fraction) <= 2:
        return (whole * 100 + int(fraction.ljust(2, "0"))) / 100
    return whole + float("0." + fraction)


@lru_cache(maxsize=16_384)
def parse_time(text: str) -> float:
    """A Haizea delta in seconds; raises ``TimeSyntaxError`` outside the grammar.
    Cached: durations repeat throughout a workload."""
    return parse_time_uncached(text)


def parse_time_uncached(text: str) -> float:
    """``parse_time`` for values that rarely repeat (arrivals, start times, deadlines):
    through the cache, 100,000 distinct arrivals would only evict the durations."""
    clock = _CLOCK.fullmatch(text)
    if clock:
        days, hours, minutes, secs, centis = clock.groups()
        return ((int(days or 0) * 24 + int(hours)) * 360_000 + int(minutes) * 6_000
                + int(secs) * 100 + int(centis)) / 100
    value = text.strip()
    match = _DHMS.fullmatch(value)
    if match:
        sign, days, hours, minutes, secs, fraction = match.groups()
        whole = ((int(days) * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(secs)
        seconds = _seconds(whole, fraction)
        return -seconds if sign == "-" else seconds
    match = _HMS.fullmatch(value)
    if match:
        sign, days, hours, minutes, secs, fraction = match.groups()
        whole = ((int(days or 0) * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(secs or 0)
        seconds = _seconds(whole, fraction)
        return -seconds if sign == "-" else seconds
    match = _UNITS.fullmatch(value)
    if match and value:
        days, hours, minutes, secs = (float(part) if part else 0.0 for part in match.groups())
        return ((days * 24 + hours) * 60 + minutes) * 60 + secs
    raise _time_error(value)


def _time_error(value: str) -> TimeSyntaxError:
    if _BARE_NUMBER.fullmatch(value):
        return TimeSyntaxError(f"{value!r} is a bare number, not a Haizea time",
                               "Haizea would silently read it as 0 s; write HH:MM:SS[.ss]")
    if _ISO_DATE.match(value):
        return TimeSyntaxError(f"{value!r} is a timestamp, not a Haizea time offset",
                               "Haizea would read only its time of day; LWF times are "
                               "[D:]HH:MM:SS[.ss] from the workload start")
    return TimeSyntaxError(f"{value!r} is not a Haizea time",
                           "use [+-][D:]HH:MM:SS[.ss], H:M or NdNhNmNs; Haizea would "
                           "silently read it as 0 s")


def format_time(seconds: float, plus: bool = False) -> str:
    """Haizea's own form: ``HH:MM:SS.ss``, ``D:HH:MM:SS.ss`` from one day on."""
    centis = round(seconds * 100)
    sign = "-" if centis < 0 else ("+" if plus else "")
    days, rest = divmod(abs(centis), 8_640_000)
    hours, rest = divmod(rest, 360_000)
    minutes, rest = divmod(rest, 6_000)
    secs, centis_left = divmod(rest, 100)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}.{centis_left:02d}"
    return f"{sign}{days}:{clock}" if days else sign + clock


def parse_absolute(text: str) -> _dt.datetime | None:
    match = _ABSOLUTE.fullmatch(text.strip())
    if not match:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    try:
        moment = _dt.datetime(int(year), int(month), int(day), int(hour or 0),
                              int(minute or 0), int(second or 0))
    except ValueError:
        return None
    if fraction:
        moment += _dt.timedelta(seconds=float("0." + fraction))
    return moment


_CLOCK_PART_LIMIT = 1 << 14
_clock_hours: dict[str, int] = {}
"""``[D:]HH:`` -> centiseconds, learned from the times parsed; so are the ``MM:`` and
``SS.ss`` tables (filled as met rather than at import: every dcx start-up imports this)."""
_clock_minutes: dict[str, int] = {}
_clock_seconds: dict[str, int] = {}


def parse_offset(text: str) -> float:
    """``parse_time_uncached`` (same value, same errors), faster for Haizea's own
    ``[D:]HH:MM:SS.ss``: distinct arrivals share their hour, minute and second parts, so
    the three parts are looked up in small tables instead of matching the whole string."""
    hours = _clock_hours.get(text[:-8])
    minutes = _clock_minutes.get(text[-8:-5])
    seconds = _clock_seconds.get(text[-5:])
    if hours is None or minutes is None or seconds is None:
        return _parse_offset_and_learn(text)
    return (hours + minutes + seconds) / 100  # parse_time_uncached's sum, in the same order


def _parse_offset_and_learn(text: str) -> float:
    value = parse_time_uncached(text)
    clock = _CLOCK.fullmatch(text)
    if clock is not None and len(_clock_hours) < _CLOCK_PART_LIMIT:
        days, hours, minutes, seconds, centis = clock.groups()
        _clock_hours[text[:-8]] = (int(days or 0) * 24 + int(hours)) * 360_000
        _clock_minutes[text[-8:-5]] = int(minutes) * 6_000
        _clock_seconds[text[-5:]] = int(seconds) * 100 + int(centis)
    return value
