"""Flux R's names shared by the reader, the normal form and the writer."""

from __future__ import annotations

SCHEMA = "flux-r.schema.json"
PREFIX = "flux-r:"
FORBIDDEN_PROPERTY_CHARACTERS = frozenset("!&'\"^`|()")
CHILDREN = PREFIX + "children"
"""Machine extras key: child types beyond core and gpu, type → idset text."""

MAX_RANKS = 1 << 20
"""Ranks in one R: single machines when a writer or the scheduler expands them; the same
bound as hosts in one hostlist range."""
MAX_DEVICES = 1 << 16
"""GPUs per rank become one model object each (other children are kept as idsets)."""

_KEPT_TOP_LEVEL = ("scheduling", "attributes")
_KEPT_EXECUTION = ("nslots",)
"""Kept verbatim in ``Environment.extras``; ``starttime``/``expiration`` are the model's
``Environment.validity`` (``dcx.parsing.fluxion.TIMES``)."""
