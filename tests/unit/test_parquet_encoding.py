"""Which columns of a target table get Parquet's dictionary encoding turned off (pure)."""

from __future__ import annotations

from spark_jobs.parquet_encoding import dictionary_off, unique_columns


def test_a_single_column_key_and_the_per_event_positions_are_unique_per_row() -> None:
    assert unique_columns(["id"]) == ["id", "_cdc_seq.lsn", "_cdc_seq.kafka_offset"]


def test_the_columns_of_a_composite_key_may_repeat_and_keep_the_dictionary() -> None:
    assert unique_columns(["tenant", "id"]) == ["_cdc_seq.lsn", "_cdc_seq.kafka_offset"]
    assert unique_columns([]) == ["_cdc_seq.lsn", "_cdc_seq.kafka_offset"]


def test_each_unique_column_gets_its_own_property_set_to_false() -> None:
    assert dictionary_off(["order id"]) == {
        "parquet.enable.dictionary#order id": "false",
        "parquet.enable.dictionary#_cdc_seq.lsn": "false",
        "parquet.enable.dictionary#_cdc_seq.kafka_offset": "false",
    }


def test_a_property_the_table_already_has_is_left_as_it_is_whatever_its_value() -> None:
    stored = {"parquet.enable.dictionary#id": "true", "parquet.enable.dictionary#_cdc_seq.lsn": "false",
              "delta.enableChangeDataFeed": "true"}
    assert dictionary_off(["id"], stored) == {"parquet.enable.dictionary#_cdc_seq.kafka_offset": "false"}
    every = {**stored, "parquet.enable.dictionary#_cdc_seq.kafka_offset": "false"}
    assert dictionary_off(["id"], every) == {}
