"""The committed wire-format documents are exactly what the code produces."""

from __future__ import annotations

import json

import pytest

from schemas.generate import HERE, envelope_example, signal_schema_text, type_mapping_markdown
from signaller.signals.parsing import signal_schema

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


def test_signal_schema_document_is_the_one_the_package_ships() -> None:
    """``schemas/signal.schema.json`` is a copy, for readers, of the package data the parser validates with."""
    assert (HERE / "signal.schema.json").read_text(encoding="utf-8") == signal_schema_text(), \
        "run python -m schemas.generate"
    assert json.loads(signal_schema_text()) == signal_schema()
    assert signal_schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_readme_lists_every_document() -> None:
    readme = (HERE / "README.md").read_text()
    for document in sorted(HERE.glob("*.json")) + sorted(HERE.glob("*.md")):
        if document.name != "README.md":
            assert f"`{document.name}`" in readme, f"{document.name} is missing from schemas/README.md"
