"""Where a Haizea diagnostic points: line, column and XPath of an element, also inside a
streamed request past line 65,535 (where libxml2 gives every node that line)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dcx.core.diagnostics import Diagnostic, error, warning
from dcx.formats.haizea.rules import Finding
from dcx.formats.haizea.times import TimeSyntaxError, parse_time, parse_time_uncached
from dcx.parsing import xmlio

REQUEST_TAG = re.compile(rb"<lease-request(?=[\s/>])")


@dataclass
class Context:
    """Diagnostics and locations while one document is read."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    request: Any = None
    """Streaming: the ``<lease-request>`` being read (earlier ones are already deleted)."""
    request_position: int = 0
    """Streaming: the 1-based position of ``request`` among the requests."""
    data: bytes = b""
    """The input, so diagnostics can give the column of the element they name."""
    request_starts: list[tuple[int, int]] = field(default_factory=list)
    """(offset, line) of the start tag of each streamed request found so far, in order."""

    def request_line(self, position: int | None = None) -> int | None:
        """The source line where streamed request ``position`` (default: the current one)
        starts. libxml2 gives every node of a streamed request past line 65,535 that very
        line (the text it would recover the real one from is deleted), so the requests'
        start tags are counted in the bytes, once, in order, as far as asked."""
        wanted = self.request_position if position is None else position
        starts = self.request_starts
        offset, line = starts[-1] if starts else (-1, 1)
        while len(starts) < wanted:
            match = REQUEST_TAG.search(self.data, offset + 1)
            if match is None:
                return None
            line += self.data.count(b"\n", max(offset, 0), match.start())
            offset = match.start()
            starts.append((offset, line))
        return starts[wanted - 1][1] if wanted > 0 else None

    def element_line(self, element: Any, position: int | None = None) -> int | None:
        """``element.sourceline``, or past line 65,535 in a streamed request (``position``,
        default: the current one), the line of the first such start tag from the request's
        first line on."""
        line: int | None = element.sourceline
        if line != xmlio.SATURATED_LINE or self.request is None:
            return line
        return self.tag_line(element.tag, position) or line

    def tag_line(self, tag: Any, position: int | None = None) -> int | None:
        """The line of the first ``<tag`` from the first line of streamed request
        ``position`` on (``None`` when it cannot be found)."""
        start = self.request_line(position)
        if start is None or not isinstance(tag, str):
            return None
        found = xmlio.locate_tag(self.data, tag, None,
                                 range(start, start + xmlio.NEAR_LINE_SPAN))
        return found[0] if found is not None else start

    @property
    def request_xpath(self) -> str:
        """Built only when a diagnostic needs it: most requests report nothing."""
        return f"/lease-workload/lease-requests/lease-request[{self.request_position}]"

    def xpath(self, element: Any, attribute: str | None = None) -> str:
        if self.request is not None:
            tree = element.getroottree()
            inner = tree.getpath(element)[len(tree.getpath(self.request)):]
            path = self.request_xpath + inner
        else:
            path = xmlio.element_xpath(element)
        return f"{path}/@{attribute}" if attribute else path

    def report(self, diagnostic: Callable[..., Diagnostic], code: str, message: str,
               element: Any, attribute: str | None = None, hint: str | None = None) -> None:
        line = self.element_line(element)
        self.diagnostics.append(diagnostic(message, code, line=line,
                                           column=self.column(line, element.tag, attribute),
                                           pointer=self.xpath(element, attribute), hint=hint))

    def column(self, line: int | None, tag: str, attribute: str | None) -> int | None:
        """1-based column of the first ``<tag`` on ``line`` (of its ``attribute`` when
        named), or ``None`` when the line does not show it."""
        if not line or not self.data or not isinstance(tag, str):
            return None
        found = xmlio.locate_tag(self.data, tag, attribute, (line,))
        return found[1] if found is not None else None

    def error(self, code: str, message: str, element: Any, attribute: str | None = None,
              hint: str | None = None) -> None:
        self.report(error, code, message, element, attribute, hint)

    def warn(self, code: str, message: str, element: Any, attribute: str | None = None,
             hint: str | None = None) -> None:
        self.report(warning, code, message, element, attribute, hint)

    def time(self, element: Any, attribute: str = "time") -> float | None:
        """A duration (cached parse: they repeat); ``None`` (reported) when malformed."""
        text = element.get(attribute)
        if text is None:
            return None
        try:
            return parse_time(text)
        except TimeSyntaxError as exc:
            self.time_error(exc, element, attribute)
            return None

    def offset(self, element: Any, attribute: str = "time") -> float | None:
        """A point in time (arrival, start, deadline): nearly unique, so not cached."""
        text = element.get(attribute)
        if text is None:
            return None
        try:
            return parse_time_uncached(text)
        except TimeSyntaxError as exc:
            self.time_error(exc, element, attribute)
            return None

    def time_error(self, exc: TimeSyntaxError, element: Any, attribute: str) -> None:
        self.error("haizea.time-syntax", str(exc), element, attribute, exc.hint)

    def finding(self, finding: Finding, element: Any) -> None:
        """A rule's finding (``rules``), at the element it is about."""
        self.report(warning if finding.warning else error, finding.code, finding.message,
                    element, finding.attribute, finding.hint)

    def xsd(self, schema: Any, target: Any) -> bool:
        """Validate a tree, or (streaming) the current request; False when invalid."""
        if schema.validate(target):
            return True
        near = self.request_line() if self.request is not None and self.data else None
        self.diagnostics.extend(xmlio.xsd_log_diagnostics(schema.error_log, self.data,
                                                          self.request_pointer, near))
        return False

    def request_pointer(self, entry: Any) -> str | None:
        """A streamed request's XSD errors name it in the whole document; ``None`` lets
        xmlio derive the XPath from the entry."""
        path = entry.path or ""
        if self.request is not None and path.startswith("/lease-request"):
            return self.request_xpath + path[len("/lease-request"):]
        return None
