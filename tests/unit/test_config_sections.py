"""signaller.config sections: every property is declared once, and each section field is one property."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import types
from collections import Counter
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import pytest

from signaller.config import FAMILIES, PROPERTIES, Status, config_from_mapping
from signaller.config.declare import property_of
from signaller.config.fields import UNSUPPORTED
from signaller.config.names import property_for_env
from signaller.config.sections import SECTION_TYPES, SETTINGS, Sections

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CONFIG_PACKAGE = ROOT / "signaller" / "config"
_DECLARERS = {"setting", "choice", "channel_list"}
_LISTERS = {"accepted", "refused"}


def _declared_in_source() -> Counter[str]:
    """Every property name written as a declaration anywhere in the config package's source."""
    names: Counter[str] = Counter()
    for path in CONFIG_PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            literals = [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            if node.func.id in _DECLARERS and node.args:
                first = node.args[0]
                assert isinstance(first, ast.Constant), f"{path.name}: {node.func.id} needs a literal name"
                names[first.value] += 1
            elif node.func.id in _LISTERS:
                names.update(literals[1:] if isinstance(node.args[0], ast.Constant) else literals)
    return names


def test_every_property_is_declared_in_exactly_one_place() -> None:
    in_source = _declared_in_source()
    assert {name: count for name, count in in_source.items() if count != 1} == {}
    assert set(in_source) == {prop.name for prop in PROPERTIES}
    assert len(PROPERTIES) == len(in_source)


def test_every_section_field_is_exactly_one_supported_property() -> None:
    places = Counter((setting.section, setting.field) for setting in SETTINGS)
    assert all(count == 1 for count in places.values())
    for name, section in SECTION_TYPES.items():
        for item in dataclasses.fields(section):
            prop = property_of(item)
            assert prop is not None and prop.status is Status.SUPPORTED, f"{name}.{item.name}"
    supported = [prop.name for prop in PROPERTIES if prop.status is Status.SUPPORTED]
    assert supported == [setting.prop.name for setting in SETTINGS]
    assert not {prop.name for prop in UNSUPPORTED} & set(supported)
    assert [item.name for item in dataclasses.fields(Sections)] == list(SECTION_TYPES)


def test_section_fields_are_frozen() -> None:
    cfg = config_from_mapping(_BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.database.port = 1  # type: ignore[misc]


_BASE = {"database.hostname": "db", "database.user": "u", "database.dbname": "d", "topic.prefix": "pg1"}
_RICH = {**_BASE, "database.password": "pw", "signaller.http.token": "t", "table.include.list": "public.a,public.b",
         "message.key.columns": "public.a:id", "signal.data.collection": "public.sig",
         "signal.enabled.channels": "source,kafka", "notification.enabled.channels": "log,sink",
         "notification.sink.topic.name": "notes", "offset.storage": "file", "offset.storage.file.filename": "o",
         "topic.heartbeat.name": "hb", "database.sslcert": "c", "security.protocol": "SSL"}


def _conforms(value: object, hint: Any) -> bool:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_conforms(value, option) for option in get_args(hint))
    if hint is type(None):
        return value is None
    if origin in (tuple, frozenset):
        item_type = get_args(hint)[0]
        return isinstance(value, origin) and all(_conforms(item, item_type) for item in value)
    return isinstance(value, hint)


@pytest.mark.parametrize("properties", [_BASE, _RICH], ids=["defaults", "rich"])
def test_every_value_has_its_fields_type(properties: dict[str, str]) -> None:
    cfg = config_from_mapping(properties)
    for setting in SETTINGS:
        hint = get_type_hints(SECTION_TYPES[setting.section])[setting.field]
        assert _conforms(setting.value_in(cfg), hint), (setting.prop.name, setting.value_in(cfg), hint)


def _readme_configuration() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Configuration")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def _is_declared(name: str) -> bool:
    if name.endswith(".*"):
        return any(family.prefix == name[:-1] for family in FAMILIES)
    return any(name in (prop.name, *prop.aliases) for prop in PROPERTIES)


def test_properties_the_readme_documents_are_declared() -> None:
    section = _readme_configuration()
    quoted = set(re.findall(r"`([a-z][a-zA-Z]*(?:\.[a-zA-Z*]+)+)`", section)) - {"connector.json"}
    examples = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.DOTALL)]
    documented = quoted | {name for example in examples for name in example["config"]}
    assert len(examples) >= 2, "the JSON and the Avro connector examples"
    assert documented and not {name for name in documented if not _is_declared(name)}
    for variable in re.findall(r"`(SIGNALLER_[A-Z_]+)`", section):
        assert property_for_env(variable) is not None, variable
