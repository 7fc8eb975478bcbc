"""``signaller signal ...`` and ``signaller status``: the file channel, and the HTTP channel against a served API."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from devtools.env import dev_variables
from signaller.api import MetricsRegistry, create_app, serve
from signaller.errors import SignalError
from signaller.runtime.cli import app
from signaller.signals.model import Signal
from signaller.signals.parsing import parse_action, signal_from_json
from signaller.snapshot.control import SidecarControl, SidecarStatus, TableProgress
from tests.unit.test_api import MISSING_REASON, FakeLoop

pytestmark = pytest.mark.unit

TOKEN = "tok-cli-51c0"
BASE_CONFIG = {"topic.prefix": "pg1", "database.hostname": "db.internal", "database.user": "cdc",
               "database.dbname": "shop"}


def invoke(*args: str, env: Mapping[str, str | None] | None = None) -> Result:
    """Run the CLI in-process; SIGNALLER_HTTP_TOKEN (and the dev tree's variables, which are no
    configuration: ``devtools.env``) are unset unless ``env`` sets them."""
    environment: dict[str, str | None] = {**dict.fromkeys(dev_variables()), "SIGNALLER_HTTP_TOKEN": None,
                                          "COLUMNS": "200", **(env or {})}
    return CliRunner().invoke(app, list(args), env=environment)


def write_config(path: Path, **extra: object) -> Path:
    properties = {**BASE_CONFIG, **{key.replace("_", "."): value for key, value in extra.items()}}
    path.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
    return path


# -- file channel --------------------------------------------------------------------------------------------


@pytest.fixture
def signal_file(tmp_path: Path) -> Path:
    return tmp_path / "signals" / "file-signals.txt"


@pytest.fixture
def file_config(tmp_path: Path, signal_file: Path) -> Path:
    signal_file.parent.mkdir()
    return write_config(tmp_path / "sidecar.properties", signal_file=signal_file)


def test_file_channel_appends_one_json_line_per_signal(file_config: Path, signal_file: Path) -> None:
    commands = [
        ("execute", "public\\.orders", "public.lines", "--filter", "public\\.orders=status = 'open' AND qty > 1",
         "--surrogate-key", "order_no", "--id", "f-1"),
        ("pause", "--id", "f-2"),
        ("resume", "--id", "f-3"),
        ("stop", "public.lines", "--id", "f-4"),
        ("log", "checkpoint {}", "--id", "f-5"),
        ("execute", "public.orders", "--type", "blocking", "--id", "f-6"),
    ]
    for command in commands:
        result = invoke("signal", *command, "--channel", "file", "--config", str(file_config))
        assert result.exit_code == 0, result.output
        assert f"written to the signal file {signal_file}" in result.stdout

    lines = signal_file.read_text().splitlines()
    assert len(lines) == len(commands)
    signals = [json.loads(line) for line in lines]
    assert signals[0] == {"id": "f-1", "type": "execute-snapshot", "data": {
        "data-collections": ["public\\.orders", "public.lines"], "type": "incremental",
        "additional-conditions": [{"data-collection": "public\\.orders", "filter": "status = 'open' AND qty > 1"}],
        "surrogate-key": "order_no"}}
    assert [(item["id"], item["type"], item["data"]) for item in signals[1:]] == [
        ("f-2", "pause-snapshot", {}),
        ("f-3", "resume-snapshot", {}),
        ("f-4", "stop-snapshot", {"type": "incremental", "data-collections": ["public.lines"]}),
        ("f-5", "log", {"message": "checkpoint {}"}),
        ("f-6", "execute-snapshot", {"data-collections": ["public.orders"], "type": "blocking"}),
    ]
    for line in lines:  # what the sidecar's file channel will read
        parse_action(signal_from_json(line, channel="file"))


def test_default_signal_id_is_a_fresh_uuid(file_config: Path, signal_file: Path) -> None:
    for _ in range(2):
        assert invoke("signal", "pause", "--channel", "file", "--config", str(file_config)).exit_code == 0
    first, second = (json.loads(line)["id"] for line in signal_file.read_text().splitlines())
    assert first != second and len(first) == 36


def test_file_channel_refuses_an_invalid_signal_before_writing(file_config: Path, signal_file: Path) -> None:
    result = invoke("signal", "execute", "public.(orders", "--channel", "file", "--config", str(file_config),
                    "--id", "bad-1")
    assert result.exit_code == 1
    assert result.stdout.startswith("signal bad-1 rejected: ")
    assert "public.(orders" in result.stdout
    assert not signal_file.exists()


def test_file_channel_needs_config() -> None:
    result = invoke("signal", "pause", "--channel", "file")
    assert result.exit_code == 2
    assert "--channel file needs --config" in result.stderr


def test_unwritable_signal_file_is_exit_2(tmp_path: Path) -> None:
    config = write_config(tmp_path / "sidecar.properties", signal_file=tmp_path / "no-such-dir" / "signals.txt")
    result = invoke("signal", "pause", "--channel", "file", "--config", str(config))
    assert result.exit_code == 2
    assert "cannot append to the signal file" in result.stderr


def test_filter_needs_table_equals_expression(file_config: Path) -> None:
    result = invoke("signal", "execute", "public.orders", "--filter", "qty > 1", "--channel", "file",
                    "--config", str(file_config))
    assert result.exit_code == 2
    assert "TABLE=EXPR" in result.output


# -- http channel --------------------------------------------------------------------------------------------


@dataclass
class Served:
    url: str
    port: int
    control: SidecarControl
    loop: FakeLoop


@pytest.fixture
def served() -> Iterator[Served]:
    control = SidecarControl()
    with FakeLoop(control) as loop:
        api = serve(create_app(control, token=TOKEN, metrics=MetricsRegistry()), "127.0.0.1", 0)
        try:
            api.wait_started(10)
            yield Served(api.url, api.port, control, loop)
        finally:
            api.stop()


def test_http_accepted_is_exit_0(served: Served) -> None:
    result = invoke("signal", "execute", "public.orders", "--filter", "public.orders=id > 5", "--id", "h-1",
                    "--url", served.url, "--token", TOKEN)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "signal h-1 accepted"
    [signal] = served.loop.received
    assert isinstance(signal, Signal)
    assert (signal.id, signal.type, signal.channel) == ("h-1", "execute-snapshot", "http")
    assert signal.data["additional-conditions"] == [{"data-collection": "public.orders", "filter": "id > 5"}]


def test_http_every_command(served: Served) -> None:
    for command in (("pause",), ("resume",), ("stop",), ("stop", "public.a", "public.b"), ("log", "hello")):
        result = invoke("signal", *command, "--url", served.url, "--token", TOKEN)
        assert result.exit_code == 0, result.output
    kinds = [item.type for item in served.loop.received if isinstance(item, Signal)]
    assert kinds == ["pause-snapshot", "resume-snapshot", "stop-snapshot", "stop-snapshot", "log"]


def test_http_token_from_the_environment(served: Served) -> None:
    result = invoke("signal", "pause", "--url", served.url, env={"SIGNALLER_HTTP_TOKEN": TOKEN})
    assert result.exit_code == 0, result.output


def test_http_url_and_token_default_from_config(served: Served, tmp_path: Path) -> None:
    config = write_config(tmp_path / "sidecar.properties", signaller_http_port=served.port,
                          signaller_http_token=TOKEN)
    result = invoke("signal", "pause", "--id", "cfg-1", "--config", str(config))
    assert result.exit_code == 0, result.output
    assert "signal cfg-1 accepted" in result.stdout


def test_http_engine_rejection_is_exit_1_with_the_reason(served: Served) -> None:
    result = invoke("signal", "execute", "public.missing", "--id", "h-2", "--url", served.url, "--token", TOKEN)
    assert result.exit_code == 1
    assert result.stdout.strip() == f"signal h-2 rejected: {MISSING_REASON}"


def test_http_invalid_signal_is_exit_1_with_the_parser_reason(served: Served) -> None:
    result = invoke("signal", "execute", "public.(x", "--id", "h-3", "--url", served.url, "--token", TOKEN)
    assert result.exit_code == 1
    raw = json.dumps({"id": "h-3", "type": "execute-snapshot",
                      "data": {"data-collections": ["public.(x"], "type": "incremental"}})
    with pytest.raises(SignalError) as caught:
        parse_action(signal_from_json(raw, channel="http"))
    assert result.stdout.strip() == f"signal h-3 rejected: {caught.value.reason}"
    assert served.loop.received == []


def test_http_wrong_or_missing_token_is_exit_2(served: Served) -> None:
    for token_args in (("--token", "nope"), ()):
        result = invoke("signal", "pause", "--url", served.url, *token_args)
        assert result.exit_code == 2
        assert "missing or wrong bearer token" in result.stderr
        assert "SIGNALLER_HTTP_TOKEN" in result.stderr
    assert served.loop.received == []


def test_unreachable_sidecar_is_exit_2(served: Served) -> None:
    url = "http://127.0.0.1:9"  # discard: nothing listens
    result = invoke("signal", "pause", "--url", url, "--token", TOKEN)
    assert result.exit_code == 2
    assert f"cannot reach the sidecar at {url}" in result.stderr


# -- status --------------------------------------------------------------------------------------------------


def running_status(state: str = "running") -> SidecarStatus:
    done = state == "completed"
    return SidecarStatus(running=not done, chunk_size=512, correlation_id="req-9", tables=(
        TableProgress("public.orders", "completed" if done else "running", rows_emitted=50 if not done else 200,
                      estimated_rows=200, chunk_from="100", chunk_to="150"),
        TableProgress("public.lines", "completed" if done else "queued", estimated_rows=None),
    ))


def test_status_once_shows_header_and_a_row_per_table(served: Served) -> None:
    served.control.publish(running_status())
    result = invoke("status", "--once", "--url", served.url, "--token", TOKEN)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "incremental snapshot running" in text
    assert "chunk size 512" in text and "correlation id req-9" in text
    assert "public.orders" in text and "public.lines" in text
    assert "25%" in text and "50 / ~200" in text and "(100, 150]" in text
    assert "queued" in text


def test_status_watch_returns_once_every_table_is_done(served: Served) -> None:
    served.control.publish(running_status())

    def finish() -> None:
        time.sleep(0.3)
        served.control.publish(running_status("completed"))

    thread = threading.Thread(target=finish)
    thread.start()
    started = time.monotonic()
    result = invoke("status", "--url", served.url, "--token", TOKEN, "--interval", "0.05")
    thread.join()
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 10
    assert "100%" in result.stdout


def test_status_with_nothing_running(served: Served) -> None:
    result = invoke("status", "--url", served.url, "--token", TOKEN)
    assert result.exit_code == 0, result.output
    assert "incremental snapshot idle" in result.stdout
    assert "no table queued" in result.stdout


def test_status_errors_are_exit_2(served: Served) -> None:
    assert invoke("status", "--once", "--url", served.url).exit_code == 2
    result = invoke("status", "--once", "--url", "http://127.0.0.1:9")
    assert result.exit_code == 2
    assert "cannot reach the sidecar" in result.stderr
