"""``hstore`` as Debezium writes it: Jackson JSON text or a Connect map, in Java ``HashMap`` order."""

from __future__ import annotations

import json

import pytest

from signaller.errors import ConfigError, DecodeError
from signaller.model import Column
from signaller.sources.postgres.codecs import TypeModes, codec_for
from signaller.sources.postgres.hstore import java_hash_map_order, java_string_hash, parse_hstore

pytestmark = pytest.mark.unit


def keys_in_java_order(keys: list[str]) -> str:
    return "|".join(key for key, _value in java_hash_map_order([(key, "v") for key in keys]))


@pytest.mark.parametrize(("keys", "java"), [
    # each expected order printed by java.util.HashMap (OpenJDK 17) filled with the keys in this order
    (["a", "b", 'k"q', "é", "NULL", "=>"], 'a|=>|b|NULL|é|k"q'),
    ([f"key{i}" for i in range(30)],  # two resizes past 3/4 full
     "key1|key2|key0|key5|key6|key3|key4|key9|key7|key8|key22|key21|key20|key15|key14|key13|key12|key19|key18|"
     "key17|key16|key11|key10|key26|key25|key24|key23|key29|key28|key27"),
    (["Aa", "BB", "AaAa", "BBBB", "AaBB", "BBAa", "x", "y", "z", "zz", "zzz", "zzzz", "q", "w", "e", "r", "t",
      "u", "i", "o", "p"],  # equal String.hashCode
     "Aa|BB|zz|e|i|o|p|q|r|t|u|w|x|y|zzzz|z|zzz|AaAa|BBBB|AaBB|BBAa"),
    (["c6", "c10", "c21", "c32", "c43", "c54", "c65", "c76", "c87", "c98", "c100", "x", "yy"],
     # a 9-entry bucket resizes the small table
     "c10|c32|c54|c76|c98|c100|yy|c21|c43|c65|c87|c6|x"),
])
def test_pairs_come_in_java_hash_map_order(keys: list[str], java: str) -> None:
    assert keys_in_java_order(keys) == java


def test_java_string_hash() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    assert java_string_hash("😀") == (31 * 0xD83D + 0xDE00)  # UTF-16 code units


def test_parse_hstore_output_text() -> None:
    assert parse_hstore("") == []
    assert parse_hstore('"a"=>"1", "b"=>NULL') == [("a", "1"), ("b", None)]
    assert parse_hstore('"k\\"q"=>"v,\\\\x", "=>"=>" "') == [('k"q', "v,\\x"), ("=>", " ")]
    with pytest.raises(ValueError):
        parse_hstore('"a"=>1')


def test_json_mode_is_an_io_debezium_data_json_string_written_as_jackson_writes_it() -> None:
    c = codec_for(Column("h", 0, "hstore"), TypeModes())
    assert c.schema == {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1}
    assert c.convert('"b"=>NULL, "a"=>"x\\"\n\u0001é"') == '{"a":"x\\"\\n\\u0001é","b":null}'
    assert json.loads(c.convert('"a"=>"1"')) == {"a": "1"}
    assert c.convert("") == "{}"
    with pytest.raises(DecodeError, match="hstore"):
        c.convert("nonsense")


def test_map_mode_is_a_connect_map_of_optional_strings() -> None:
    c = codec_for(Column("h", 0, "hstore"), TypeModes(hstore_handling="map"))
    assert c.schema == {"type": "map", "keys": {"type": "string", "optional": False},
                        "values": {"type": "string", "optional": True}, "optional": True}
    assert list(c.convert('"b"=>NULL, "a"=>"1"').items()) == [("a", "1"), ("b", None)]
    with pytest.raises(ConfigError):
        TypeModes(hstore_handling="xml")  # type: ignore[arg-type]
