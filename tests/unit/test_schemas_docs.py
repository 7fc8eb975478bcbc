"""The committed wire-format documents are exactly what the code produces."""

from __future__ import annotations

import json

import pytest

from schemas.generate import HERE, envelope_example, type_mapping_markdown

pytestmark = pytest.mark.unit


def test_type_mapping_document_is_current() -> None:
    assert (HERE / "type-mapping.md").read_text() == type_mapping_markdown(), "run python -m schemas.generate"


def test_envelope_example_is_current_and_debezium_shaped() -> None:
    text = envelope_example()
    assert (HERE / "envelope.example.json").read_text() == text, "run python -m schemas.generate"
    example = json.loads(text)
    assert example["topic"] == "pg1.public.orders"
    value = example["value"]
    assert [f["field"] for f in value["schema"]["fields"]] == [
        "before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
    assert value["schema"]["name"] == "pg1.public.orders.Envelope"
    assert value["payload"]["source"]["sequence"] == '["24023128","24023160"]'
    assert example["key"]["payload"] == {"id": 17}
