"""signaller.config under hostile input: secrets never shown, every input answered by a config or a ConfigError.

Issue 10, findings 6 (secrets in messages and logs) and 8 (the loader crashing or crawling on malformed input).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signaller.config import (
    MASK,
    PROPERTIES,
    ConfigErrors,
    Kind,
    SignallerConfig,
    config_from_mapping,
    env_name,
    is_secret_name,
    load_config,
    parse_properties,
)
from signaller.errors import ConfigError
from signaller.runtime import logging_setup

pytestmark = pytest.mark.unit

SECRET = "S3cr3t-value-never-shown"
BASE: dict[str, str] = {
    "topic.prefix": "pg1", "database.hostname": "db.internal", "database.user": "cdc", "database.dbname": "shop",
}


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def properties_text(entries: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in entries.items())


BASE_PROPERTIES = properties_text(BASE)


def config_error(build: Callable[[], object]) -> ConfigError:
    """The ConfigError ``build`` raises (anything else, or nothing, fails the test)."""
    with pytest.raises(ConfigError) as caught:
        build()
    return caught.value


def assert_hidden(secret: str, error: ConfigError | None = None, *texts: str) -> None:
    """``secret`` occurs nowhere: not in the error (str, repr, each problem's value) nor in ``texts``."""
    shown = [*texts]
    if error is not None:
        shown += [str(error), repr(error)]
        shown += [repr(problem.value) for problem in getattr(error, "errors", (error,))]
    for text in shown:
        assert secret not in text, text


# --- secret-looking names --------------------------------------------------------------------------------

SECRET_NAMES = [
    "database.password", "database.sslpassword", "signaller.http.token", "SIGNALLER_HTTP_TOKEN",
    "database.pasword", "database.passwrod", "database.passwrd", "database.pssword", "SIGNALLER_DATABASE_PASWORD",
    "database.passwd", "database.pwd", "db.pass", "database.sslpasword", "app.secret", "client.secert",
    "oauth.clientSecret", "sasl.oauthbearer.client.secret", "auth.tokn", "refresh.token", "gcp.credentials",
    "gcp.credentails", "ssl.key.pem", "ssl.keystore.key", "consumer.ssl.keystore.key", "ssl.key.password",
    "producer.ssl.key", "private.key", "apiKey", "api.key", "ssl_key", "signing.key.data", "database.sslkey",
    "sasl.jaas.config", "producer.override.sasl.jaas.config", "basic.auth.user.info",
    "schema.registry.basic.auth.user.info", "sasl.oauthbearer.config", "ssl.keystore.passphrase",
]
PLAIN_NAMES = [
    "database.hostname", "database.user", "database.port", "database.dbname", "database.sslrootcert",
    "key.converter", "key.converter.schemas.enable", "message.key.columns", "ssl.key.location",
    "ssl.keystore.location", "ssl.truststore.certificates", "ssl.keystore.certificate.chain", "sasl.username",
    "sasl.mechanism", "incremental.snapshot.chunk.size", "incremental.snapshot.watermarking.strategy",
    "topic.prefix", "signal.kafka.groupId", "table.include.list", "slot.name", "SIGNALLER_HTTP_PORT",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_looking_names_are_secret(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_ordinary_names_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_every_declared_secret_is_secret_under_every_spelling() -> None:
    for prop in PROPERTIES:
        if prop.kind is Kind.SECRET:
            for name in (prop.name, *prop.aliases, env_name(prop.name)):
                assert is_secret_name(name), name


# --- finding 6: secrets in messages and logs --------------------------------------------------------------


@pytest.mark.parametrize("name", ["database.pasword", "database.passwrd", "db.pwd", "database.passwort"])
def test_misspelt_secret_property_is_named_and_its_value_masked(name: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        error = config_error(lambda: config_from_mapping({**BASE, name: SECRET}))
    assert isinstance(error, ConfigErrors) and [e.key for e in error.errors] == [name]
    assert error.errors[0].value == MASK
    assert_hidden(SECRET, error, caplog.text)


def test_misspelt_secret_in_properties_file_is_masked_next_to_did_you_mean(tmp_path: Path) -> None:
    path = write(tmp_path, "c.properties", properties_text({**BASE, "database.pasword": SECRET}))
    error = config_error(lambda: load_config(path, {}))
    assert "database.pasword" in str(error) and "did you mean 'database.password'" in str(error)
    assert_hidden(SECRET, error)


def test_misspelt_secret_environment_variable_is_masked() -> None:
    env = {"SIGNALLER_DATABASE_PASWORD": SECRET}
    error = config_error(lambda: config_from_mapping(BASE, env))
    assert "SIGNALLER_DATABASE_PASWORD" in str(error) and "SIGNALLER_DATABASE_PASSWORD" in str(error)
    assert_hidden(SECRET, error)


def test_unknown_property_value_is_never_shown_whatever_its_name() -> None:
    error = config_error(lambda: config_from_mapping({**BASE, "databse.hots": SECRET}))
    assert "databse.hots" in str(error)
    assert_hidden(SECRET, error)


def test_stray_keys_beside_config_are_all_named_and_secret_values_masked(tmp_path: Path) -> None:
    document = {"name": "c", "config": BASE, "database.password": SECRET, "slot.name": "s1"}
    path = write(tmp_path, "c.json", json.dumps(document))
    error = config_error(lambda: load_config(path, {}))
    assert isinstance(error, ConfigErrors)
    assert {e.key for e in error.errors} == {"database.password", "slot.name"}
    assert "move properties into \"config\"" in str(error)
    assert_hidden(SECRET, error)


def test_nested_object_shows_its_structure_never_a_secret(tmp_path: Path) -> None:
    document = {**BASE, "database": {"password": SECRET, "hostname": "db2", "more": [{"token": SECRET}]}}
    path = write(tmp_path, "c.json", json.dumps(document))
    error = config_error(lambda: load_config(path, {}))
    assert error.key == "database"
    assert '"password"' in str(error) and '"token"' in str(error) and "dotted names" in str(error)
    assert_hidden(SECRET, error)


def test_duplicate_secret_in_json_is_masked(tmp_path: Path) -> None:
    text = json.dumps(BASE)[:-1] + f', "database.password": "a", "database.password": "{SECRET}"}}'
    error = config_error(lambda: load_config(write(tmp_path, "c.json", text), {}))
    assert "database.password" in str(error)
    assert_hidden(SECRET, error)


def test_kafka_key_material_is_hidden_from_repr_str_and_display(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        cfg = config_from_mapping({**BASE, "ssl.key.pem": SECRET, "producer.ssl.keystore.key": SECRET,
                                   "database.password": SECRET})
    display = cfg.to_display_dict()
    assert display["ssl.key.pem"] == MASK and display["producer.ssl.keystore.key"] == MASK
    assert_hidden(SECRET, None, repr(cfg), str(cfg), json.dumps(display), caplog.text)
    assert cfg.producer_config()["ssl.keystore.key"] == SECRET  # still handed to the client


def test_accepted_but_ignored_secret_overrides_are_logged_without_values(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        cfg = config_from_mapping({**BASE, "consumer.ssl.keystore.key": SECRET, "admin.ssl.key.pem": SECRET,
                                   "consumer.override.sasl.jaas.config": SECRET, "errors.retry.pwd": SECRET})
    assert "consumer.ssl.keystore.key" in caplog.text and "ignoring" in caplog.text
    assert_hidden(SECRET, None, caplog.text, repr(cfg), json.dumps(cfg.to_display_dict()))


def test_unsupported_provider_in_a_secret_does_not_repeat_parts_of_it() -> None:
    error = config_error(lambda: config_from_mapping({**BASE, "database.password": "${Zq9x:y}"}, env={}))
    assert "database.password" in str(error) and "config provider" in str(error)
    assert_hidden("Zq9x", error)


# --- finding 8: malformed input --------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_deeply_nested_json_is_a_config_error(tmp_path: Path, text: str) -> None:
    error = config_error(lambda: load_config(write(tmp_path, "c.json", text), {}))
    assert error.key == "(file)" and "nested too deeply" in str(error) and "c.json" in str(error)


def test_huge_json_integer_is_a_config_error_naming_the_property(tmp_path: Path) -> None:
    text = json.dumps(BASE)[:-1] + ', "max.batch.size": ' + "9" * 5000 + "}"
    error = config_error(lambda: load_config(write(tmp_path, "c.json", text), {}))
    assert isinstance(error, ConfigErrors) and [e.key for e in error.errors] == ["max.batch.size"]
    assert "an integer from" in str(error) and "(5000 characters)" in str(error) and len(str(error)) < 2000


@pytest.mark.parametrize("value", ["9" * 5000, "9223372036854775808", "1_000", "\u0661\u0662"])
def test_integer_property_accepts_only_java_longs(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, "c.properties", properties_text({**BASE, "max.queue.size": value}))
    error = config_error(lambda: load_config(path, {}))
    assert error.key == "max.queue.size" and "an integer from" in error.accepted


def test_lone_surrogate_escape_in_properties_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, "c.properties", BASE_PROPERTIES + "slot.name=\\uD800\n")
    error = config_error(lambda: load_config(path, {}))
    assert error.key == "slot.name" and "surrogate" in error.accepted and ":5" in str(error.origin)
    str(error).encode("utf-8")


def test_surrogate_pair_escape_is_one_character(tmp_path: Path) -> None:
    path = write(tmp_path, "c.properties", BASE_PROPERTIES + "unavailable.value.placeholder=\\uD83D\\uDE00\n")
    assert load_config(path, {}).types.unavailable_value_placeholder == "\N{GRINNING FACE}"


def test_undecodable_environment_bytes_are_a_config_error() -> None:
    variable = "SIGNALLER_SLOT_NAME"
    env = {variable: os.fsdecode(b"slot\xff")}  # what os.environ holds for bytes that are not UTF-8
    error = config_error(lambda: config_from_mapping(BASE, env))
    assert error.key == "slot.name" and error.origin == f"env:{variable}" and "Unicode" in error.accepted
    str(error).encode("utf-8")


def test_names_with_line_breaks_cannot_forge_log_lines(tmp_path: Path) -> None:
    document = {**BASE, "x\ninvalid configuration database.password='leak'": "1"}
    error = config_error(lambda: load_config(write(tmp_path, "c.json", json.dumps(document)), {}))
    lines = str(error).splitlines()
    assert len(lines) == 2 and "x\\ninvalid" in lines[1]


@pytest.mark.parametrize("value", ["public.a{99999999999}", "public.a{1001}", "public.(orders", "(?=x)y"])
def test_bad_or_huge_regex_in_list_property_never_escapes_as_another_exception(value: str) -> None:
    try:
        cfg = config_from_mapping({**BASE, "table.include.list": value})
    except ConfigError as error:
        assert error.key == "table.include.list" and "does not compile" in error.accepted
    else:
        assert not cfg.is_table_captured("public", "a")


@pytest.mark.timeout(10)
def test_list_patterns_match_in_linear_time_and_case_insensitively() -> None:
    cfg = config_from_mapping({**BASE, "table.include.list": "(?:.|.|.)*X,PUBLIC\\.Orders"})
    assert not cfg.is_table_captured("public", "a" * 5000)
    assert cfg.is_table_captured("public", "orders")  # Debezium: Pattern.CASE_INSENSITIVE
    assert cfg.is_table_captured("public", "a" * 5000 + "x")


@pytest.mark.timeout(20)
def test_four_megabytes_of_continuation_lines_load_in_linear_time(tmp_path: Path) -> None:
    text = BASE_PROPERTIES + "unavailable.value.placeholder=v\\\n" + "x\\\n" * 1_300_000 + "end\n"
    assert len(text) > 3_900_000
    path = write(tmp_path, "big.properties", text)
    cfg = load_config(path, {})
    assert cfg.types.unavailable_value_placeholder == "v" + "x" * 1_300_000 + "end"
    entries, problems = parse_properties("k=" + "\\\n" * 1_000_000 + "v\n" + "\\" * 2_000_000 + "\n", "f")
    assert entries[0][:2] == ("k", "v") and not problems


@pytest.mark.timeout(10)
def test_env_reference_scan_is_linear_on_a_long_value() -> None:
    value = "${" + "a:" * 200_000
    error = config_error(lambda: config_from_mapping({**BASE, "slot.name": value}, env={}))
    assert error.key == "slot.name" and len(str(error)) < 2000


# --- fuzzing: any input is a config or a ConfigError ------------------------------------------------------

_NAMES = sorted({prop.name for prop in PROPERTIES} | set(SECRET_NAMES) | {"producer.linger.ms", "name"})
_SECRETS_UNDER = st.sampled_from([name for name in SECRET_NAMES if not name.isupper()])
_ANY_TEXT = st.text(st.characters(codec=None), max_size=40)  # surrogates and control characters included
_VALUES = st.one_of(_ANY_TEXT, st.sampled_from(["", "1", "-1", "9" * 30, "true", "${env:X}", "a\\u00", "\\"]))
EXAMPLES: dict[str, int] = {}


def _outcome(load: Callable[[], SignallerConfig], counter: str) -> list[str]:
    """Run ``load``; it must return a config or raise a ConfigError. The texts anyone could see."""
    EXAMPLES[counter] = EXAMPLES.get(counter, 0) + 1
    try:
        cfg = load()
    except ConfigError as error:
        text = str(error)
        text.encode("utf-8")  # printable whatever the input
        assert all(line.startswith("  - ") for line in text.splitlines()[1:]), text
        return [text, repr(error), *(repr(e.value) for e in getattr(error, "errors", ()))]
    assert isinstance(cfg, SignallerConfig)
    return [repr(cfg), json.dumps(cfg.to_display_dict())]


def _load_text(data: bytes, suffix: str, env: Mapping[str, str]) -> Callable[[], SignallerConfig]:
    def load() -> SignallerConfig:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / f"c{suffix}"
            path.write_bytes(data)
            return load_config(str(path), env)

    return load


_FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FUZZ
@given(data=st.one_of(st.binary(max_size=300), _ANY_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass"))),
       suffix=st.sampled_from([".properties", ".json", ".yaml", ""]))
def test_fuzz_arbitrary_file_bytes(data: bytes, suffix: str) -> None:
    _outcome(_load_text(data, suffix, {}), "file bytes")


@_FUZZ
@given(entries=st.dictionaries(st.one_of(st.sampled_from(_NAMES), _ANY_TEXT), _VALUES, max_size=8),
       secret_under=_SECRETS_UNDER, suffix=st.sampled_from([".properties", ".json"]),
       nest=st.booleans())
def test_fuzz_structured_files_never_show_a_secret(
    entries: dict[str, str], secret_under: str, suffix: str, nest: bool,
) -> None:
    properties: dict[str, object] = {secret_under: SECRET, **BASE, **entries}  # first: nothing continues into it
    if suffix == ".json":
        document: object = {"name": "c", "config": properties} if nest else properties
        data = json.dumps(document).encode("utf-8", "surrogatepass")
    else:
        data = "".join(f"{_escape_key(key)}={value}\n" for key, value in properties.items()).encode(
            "utf-8", "surrogatepass")
    records: list[str] = []
    handler = _ListHandler(records)
    logging.getLogger("signaller").addHandler(handler)
    try:
        shown = _outcome(_load_text(data, suffix, {}), f"structured {suffix}")
    finally:
        logging.getLogger("signaller").removeHandler(handler)
    assert_hidden(SECRET, None, *shown, *records)


@_FUZZ
@given(env=st.dictionaries(
    st.one_of(st.sampled_from([env_name(name) for name in _NAMES]), _ANY_TEXT.map(lambda t: "SIGNALLER_" + t)),
    _VALUES, max_size=8), secret_under=_SECRETS_UNDER)
def test_fuzz_environment_never_crashes_nor_shows_a_secret(env: dict[str, str], secret_under: str) -> None:
    variables = {**env, env_name(secret_under): SECRET}
    shown = _outcome(lambda: config_from_mapping(BASE, variables), "environment")
    assert_hidden(SECRET, None, *shown)


def _escape_key(key: str) -> str:
    return key.replace("\\", "\\\\").replace("=", "\\=").replace(":", "\\:").replace(" ", "\\ ")


class _ListHandler(logging.Handler):
    def __init__(self, records: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


def test_fuzz_ran_examples() -> None:
    """Runs last in this module: the fuzz tests above ran (``-s`` prints how many examples each)."""
    print(f"config fuzz examples: {EXAMPLES}")
    assert sum(EXAMPLES.values()) > 0


# --- where config values reach logs --------------------------------------------------------------------------


@pytest.fixture
def root_logging() -> Iterator[None]:
    """Restore the root logger's handlers, level and the redaction set after ``configure_logging``."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging_setup._secrets.clear()


@pytest.mark.parametrize(("variable", "value"), [("SIGNALLER_LOG_LEVEL", "loud"), ("SIGNALLER_LOG_FORMAT", "xml")])
def test_bad_logging_variables_are_config_errors(
    monkeypatch: pytest.MonkeyPatch, root_logging: None, variable: str, value: str,
) -> None:
    monkeypatch.setenv(variable, value)
    error = config_error(logging_setup.configure_logging)
    assert error.key == variable and error.origin == f"env:{variable}"


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_secret_values_are_redacted_from_every_log_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], root_logging: None, log_format: str,
) -> None:
    monkeypatch.setenv("SIGNALLER_LOG_FORMAT", log_format)
    monkeypatch.delenv("SIGNALLER_LOG_LEVEL", raising=False)
    logging_setup.configure_logging()
    cfg = config_from_mapping({**BASE, "database.password": SECRET, "sasl.jaas.config": f'password="{SECRET}2"'})
    assert SECRET in cfg.secret_values()
    logging_setup.redact_secrets(cfg.secret_values())
    logging.getLogger("some.driver").error("connection failed: password=%s host=db \udcff", SECRET)
    err = capsys.readouterr().err
    assert "connection failed" in err and MASK in err and SECRET not in err


def test_a_pattern_with_a_line_break_gives_a_one_line_reason() -> None:
    """Found by the environment fuzz: RE2 quotes the pattern raw in its reason."""
    from signaller.patterns import PatternError, compile_pattern

    with pytest.raises(PatternError) as caught:
        compile_pattern(")\r0\n1")
    assert len(str(caught.value).splitlines()) == 1, str(caught.value)
    assert "\\r0\\n1" in caught.value.reason
