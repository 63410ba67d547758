"""Model -> Haizea XML -> model is the identity for what Haizea can hold."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from lxml import etree

from dcx.core.model import Document
from dcx.formats import haizea
from dcx.parsing import xmlio
from tests.strategies_haizea import (
    annotation_documents,
    centis,
    lease_documents,
    site_documents,
)

SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _round_trip(document: Document, schema: str) -> None:
    written = haizea.write(document)
    assert written.ok, written.diagnostics
    assert haizea.normal_form(document) == document  # so nothing is lost
    tree = etree.fromstring(written.data).getroottree()
    assert xmlio.xsd_diagnostics(xmlio.load_xsd(schema), tree) == []
    result = haizea.read(written.data)
    assert result.ok, [d.render() for d in result.diagnostics]
    assert result.document == document


@SETTINGS
@given(lease_documents())
def test_lease_workloads_round_trip(document: Document) -> None:
    _round_trip(document, "haizea-lease-workload.xsd")


@SETTINGS
@given(site_documents)
def test_sites_round_trip(document: Document) -> None:
    _round_trip(document, "haizea-site.xsd")


@SETTINGS
@given(annotation_documents())
def test_annotations_round_trip(document: Document) -> None:
    _round_trip(document, "haizea-lease-annotations.xsd")


@settings(max_examples=500)
@given(centis)
def test_times_round_trip_to_the_centisecond(value: int) -> None:
    for seconds in (value / 100, -value / 100):
        text = haizea.format_time(seconds)
        assert haizea.parse_time(text) == seconds
        assert haizea.parse_time(haizea.format_time(seconds, plus=True)) == seconds
