"""The ``signaller`` command line. Wiring only: each command delegates to a package."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console, Group, RenderableType
from rich.markup import escape

from signaller.errors import SignallerError, SourceError, TransientError

if TYPE_CHECKING:
    import httpx

    from signaller.config import SignallerConfig

app = typer.Typer(no_args_is_help=True, add_completion=False, help="PostgreSQL → Kafka CDC sidecar.")
signal_app = typer.Typer(no_args_is_help=True, help="Send a Debezium signal to a running sidecar: through its HTTP API "
                         "(the default, which answers), or its Kafka topic, signal file or signal table.")
app.add_typer(signal_app, name="signal")
console = Console(stderr=True)
out = Console(soft_wrap=True, highlight=False)
"""Answers of ``signal`` and ``status`` (stdout); their errors go to ``err`` (stderr)."""
err = Console(stderr=True, soft_wrap=True, highlight=False)


@app.command("run")
def run(config: str = typer.Option(None, "--config", "-c", help="Debezium connector JSON or .properties file; "
                                   "SIGNALLER_* environment variables override it.")) -> None:
    """Run the sidecar: capture changes and publish them to Kafka until SIGTERM."""
    import os

    from signaller.api import MetricsRegistry, create_app, serve
    from signaller.config import load_config
    from signaller.runtime.capture import CaptureLoop
    from signaller.runtime.logging_setup import configure_logging, redact_secrets
    from signaller.runtime.supervisor import Supervisor
    from signaller.snapshot.control import SidecarControl

    configure_logging()
    settings = load_config(config, os.environ)
    redact_secrets(settings.secret_values())
    control = SidecarControl()
    metrics = MetricsRegistry()
    token = settings.http.token.reveal() if settings.http.token else None
    server = serve(create_app(control, token=token, metrics=metrics), settings.http.host,
                   settings.http.port)
    server.wait_started(10)
    supervisor = Supervisor(lambda: CaptureLoop(settings, control=control, metrics=metrics),
                            on_error=control.report_error)
    supervisor.install_signal_handlers()
    try:
        code = supervisor.run()
    finally:
        server.stop()
    raise typer.Exit(code)


# -- signals -----------------------------------------------------------------------------------------------

DEFAULT_HTTP_PORT = 8089
EXIT_ACCEPTED, EXIT_REJECTED, EXIT_UNREACHABLE = 0, 1, 2
"""``signal`` exit codes: accepted (or written to the channel), rejected (with the reason), not delivered."""
SEND_TIMEOUT_S = 40.0
"""Longer than the API's 30 s wait for the capture loop, so its 503 arrives rather than a client timeout."""
TERMINAL_STATES = frozenset({"completed", "skipped", "aborted"})


class SendChannel(StrEnum):
    """How ``signaller signal`` delivers: the HTTP API answers; the others are read on the sidecar's next poll."""

    HTTP = "http"
    KAFKA = "kafka"
    FILE = "file"
    SOURCE = "source"


class SnapshotKind(StrEnum):
    """``data.type`` of execute-snapshot."""

    INCREMENTAL = "incremental"
    BLOCKING = "blocking"


ChannelOption = Annotated[SendChannel, typer.Option(
    "--channel", help="http: POST to the sidecar's API (answers accepted/rejected); kafka: produce to "
    "signal.kafka.topic; file: append a line to signal.file; source: INSERT into signal.data.collection "
    "(kafka, file and source need --config).")]
UrlOption = Annotated[str | None, typer.Option(
    "--url", help="Base URL of the sidecar's HTTP API (default: http://127.0.0.1:<signaller.http.port of "
    "--config, else 8089>).")]
TokenOption = Annotated[str | None, typer.Option(
    "--token", envvar="SIGNALLER_HTTP_TOKEN", show_envvar=True,
    help="Bearer token of the HTTP API (prefer the environment variable: arguments are visible in ps) "
    "(default: signaller.http.token of --config).")]
ConfigOption = Annotated[str | None, typer.Option(
    "--config", "-c", help="The sidecar's configuration (Debezium connector JSON or .properties).")]
IdOption = Annotated[str | None, typer.Option("--id", help="The signal id (default: a new UUID).")]


@signal_app.command("execute")
def signal_execute(
    tables: Annotated[list[str], typer.Argument(
        help="Tables to snapshot: regular expressions full-matched against 'schema.table'.", metavar="TABLE")],
    snapshot_type: Annotated[SnapshotKind, typer.Option("--type", help="Snapshot type.")] = SnapshotKind.INCREMENTAL,
    filters: Annotated[list[str] | None, typer.Option(
        "--filter", metavar="TABLE=EXPR",
        help="Only rows matching the SQL condition EXPR in tables matching TABLE (repeatable).")] = None,
    surrogate_key: Annotated[str | None, typer.Option(
        "--surrogate-key", metavar="COL", help="A unique column to chunk by instead of the primary key.")] = None,
    signal_id: IdOption = None,
    channel: ChannelOption = SendChannel.HTTP,
    url: UrlOption = None,
    token: TokenOption = None,
    config: ConfigOption = None,
) -> None:
    """Start an incremental (or blocking) snapshot of TABLE... (an execute-snapshot signal)."""
    data: dict[str, Any] = {"data-collections": list(tables), "type": snapshot_type.value}
    conditions = [_condition(text) for text in filters or ()]
    if conditions:
        data["additional-conditions"] = conditions
    if surrogate_key is not None:
        data["surrogate-key"] = surrogate_key
    _send(_signal(signal_id, "execute-snapshot", data), channel, url, token, config)


@signal_app.command("stop")
def signal_stop(
    tables: Annotated[list[str] | None, typer.Argument(
        help="Tables to remove from the running snapshot (regular expressions); none: stop it all.",
        metavar="TABLE")] = None,
    signal_id: IdOption = None,
    channel: ChannelOption = SendChannel.HTTP,
    url: UrlOption = None,
    token: TokenOption = None,
    config: ConfigOption = None,
) -> None:
    """Stop the incremental snapshot, or only its TABLE... (a stop-snapshot signal)."""
    data: dict[str, Any] = {"type": SnapshotKind.INCREMENTAL.value}
    if tables:
        data["data-collections"] = list(tables)
    _send(_signal(signal_id, "stop-snapshot", data), channel, url, token, config)


@signal_app.command("pause")
def signal_pause(
    signal_id: IdOption = None,
    channel: ChannelOption = SendChannel.HTTP,
    url: UrlOption = None,
    token: TokenOption = None,
    config: ConfigOption = None,
) -> None:
    """Pause the incremental snapshot after the current chunk (a pause-snapshot signal)."""
    _send(_signal(signal_id, "pause-snapshot", {}), channel, url, token, config)


@signal_app.command("resume")
def signal_resume(
    signal_id: IdOption = None,
    channel: ChannelOption = SendChannel.HTTP,
    url: UrlOption = None,
    token: TokenOption = None,
    config: ConfigOption = None,
) -> None:
    """Resume a paused incremental snapshot (a resume-snapshot signal)."""
    _send(_signal(signal_id, "resume-snapshot", {}), channel, url, token, config)


@signal_app.command("log")
def signal_log(
    message: Annotated[str, typer.Argument(help="Logged at INFO; '{}' becomes the current offsets.")],
    signal_id: IdOption = None,
    channel: ChannelOption = SendChannel.HTTP,
    url: UrlOption = None,
    token: TokenOption = None,
    config: ConfigOption = None,
) -> None:
    """Write MESSAGE to the sidecar's log (a log signal)."""
    _send(_signal(signal_id, "log", {"message": message}), channel, url, token, config)


def _signal(signal_id: str | None, signal_type: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"id": signal_id if signal_id is not None else str(uuid.uuid4()), "type": signal_type, "data": data}


def _condition(text: str) -> dict[str, str]:
    """``TABLE=EXPR`` (split at the first '='; SQL conditions contain '=' too) as an additional condition."""
    table, sep, expression = text.partition("=")
    if not sep or not table.strip() or not expression.strip():
        raise typer.BadParameter(f"{text!r}: expected TABLE=EXPR, e.g. \"public.orders=status = 'open'\"",
                                 param_hint="--filter")
    return {"data-collection": table.strip(), "filter": expression.strip()}


def _send(signal: dict[str, Any], channel: SendChannel, url: str | None, token: str | None,
          config_path: str | None) -> NoReturn:
    """Deliver ``signal`` and exit: 0 accepted (or written), 1 rejected, 2 not delivered.

    The HTTP API validates and answers; for the other channels the signal is validated here (with
    ``signals.parsing``) and written, and the sidecar reads it on its next poll.
    """
    if channel is SendChannel.HTTP:
        settings = _load(config_path) if config_path else None
        _send_http(signal, url or _default_url(settings), _token(token, settings))
    if config_path is None:
        _fail(f"--channel {channel.value} needs --config: the sidecar's configuration names the "
              f"{_CHANNEL_SETTING[channel]} to write to")
    settings = _load(config_path)
    reason = _local_rejection(signal)
    if reason is not None:
        _rejected(signal["id"], reason)
    try:
        where = _DELIVER[channel](settings, signal)
    except _Undelivered as exc:
        _fail(str(exc))
    except _Refused as exc:
        _rejected(signal["id"], str(exc))
    out.print(f"signal {escape(signal['id'])} written to {escape(where)}; the sidecar reads it "
              f"{_PICKUP[channel]} (follow it with `signaller status`)")
    raise typer.Exit(EXIT_ACCEPTED)


_PICKUP = {SendChannel.KAFKA: "on its next poll of the topic", SendChannel.FILE: "on its next poll of the file",
           SendChannel.SOURCE: "when the row reaches it in the change stream"}
_CHANNEL_SETTING = {SendChannel.KAFKA: "signal.kafka.topic", SendChannel.FILE: "signal.file",
                    SendChannel.SOURCE: "signal.data.collection"}


class _Undelivered(Exception):
    """The channel could not be reached (exit 2)."""


class _Refused(Exception):
    """The channel refused the signal (exit 1), e.g. the signal table rejected the row."""


def _send_http(signal: dict[str, Any], url: str, token: str | None) -> NoReturn:
    import httpx

    try:
        response = _request("POST", url, "/signals", token, json_body=signal)
    except httpx.HTTPError as exc:
        _fail(f"cannot reach the sidecar at {url}: {exc or type(exc).__name__}")
    body = _json(response)
    if response.status_code == 202:
        out.print(f"signal {escape(str(body.get('id', signal['id'])))} accepted")
        raise typer.Exit(EXIT_ACCEPTED)
    if response.status_code in (400, 413, 422):
        _rejected(str(body.get("id", signal["id"])), str(body.get("error", response.text)))
    _fail(_http_problem(url, response, body))


def _http_problem(url: str, response: httpx.Response, body: dict[str, Any]) -> str:
    error = str(body.get("error", response.text.strip()[:200]))
    if response.status_code == 401:
        return f"the sidecar at {url} refused the request: {error} (pass --token or set SIGNALLER_HTTP_TOKEN)"
    if response.status_code == 503:
        return f"the sidecar at {url} is not ready: {error}"
    return f"unexpected answer {response.status_code} from the sidecar at {url}: {error}"


def _request(method: str, url: str, path: str, token: str | None,
             json_body: dict[str, Any] | None = None) -> httpx.Response:
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=url, timeout=httpx.Timeout(SEND_TIMEOUT_S, connect=5.0)) as client:
        return client.request(method, path, json=json_body, headers=headers)


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _local_rejection(signal: dict[str, Any]) -> str | None:
    """The reason ``signals.parsing`` rejects ``signal``, or None (channels without an answer check it here)."""
    from signaller.errors import SignalError
    from signaller.signals.parsing import parse_action, signal_from_json

    try:
        parse_action(signal_from_json(json.dumps(signal), channel="http"))
    except SignalError as exc:
        return exc.reason
    return None


def _deliver_file(settings: SignallerConfig, signal: dict[str, Any]) -> str:
    """Append one line to ``signal.file`` with a single O_APPEND write (atomic against other appenders)."""
    path = Path(settings.snapshot.signal_file).absolute()
    line = (json.dumps(signal, separators=(",", ":")) + "\n").encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, line)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _Undelivered(f"cannot append to the signal file {path}: {exc.strerror}") from exc
    if written != len(line):
        raise _Undelivered(f"short write to the signal file {path}: {written} of {len(line)} bytes")
    return f"the signal file {path}"


def _deliver_kafka(settings: SignallerConfig, signal: dict[str, Any]) -> str:
    """Produce to partition 0 of ``signal.kafka.topic`` with key ``topic.prefix`` and wait for the ack."""
    from confluent_kafka import KafkaException, Producer

    connection = {key: value for key, value in settings.signal_consumer_config().items()
                  if key.startswith(("bootstrap.", "security.", "sasl.", "ssl."))}
    topic = settings.snapshot.signal_kafka_topic
    where = f"Kafka topic {topic} at {connection.get('bootstrap.servers')}"
    failures: list[str] = []
    client_errors: list[str] = []  # librdkafka's own log lines are silenced; its last error is reported instead

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(error.str() if hasattr(error, "str") else str(error))

    def client_error(error: Any) -> None:
        client_errors.append(error.str() if hasattr(error, "str") else str(error))

    try:
        producer = Producer({**connection, "acks": "all", "message.timeout.ms": 15000, "log_level": 0,
                             "error_cb": client_error})
        producer.produce(topic, key=settings.topics.prefix.encode(), value=json.dumps(signal).encode(),
                         partition=0, on_delivery=delivered)
        pending = producer.flush(20)
    except (KafkaException, BufferError) as exc:
        raise _Undelivered(f"cannot produce to {where}: {exc}") from exc
    if failures or pending:
        problem = failures[0] if failures else "no acknowledgement within 20 s"
        cause = f" ({client_errors[-1]})" if client_errors else ""
        raise _Undelivered(f"cannot produce to {where}: {problem}{cause}")
    return f"{where} (partition 0, key {settings.topics.prefix!r})"


def _deliver_source(settings: SignallerConfig, signal: dict[str, Any]) -> str:
    """INSERT (id, type, data) into ``signal.data.collection``, committed (the source's signal writer)."""
    from signaller.sources.registry import write_signal

    table = settings.snapshot.signal_data_collection
    if table is None:
        raise _Undelivered("signal.data.collection is not set: the source channel needs the signal table")
    try:
        write_signal(settings, table, signal)
    except TransientError as exc:
        raise _Undelivered(str(exc)) from exc
    except SourceError as exc:
        raise _Refused(str(exc)) from exc
    return f"the signal table {table}"


_DELIVER = {SendChannel.FILE: _deliver_file, SendChannel.KAFKA: _deliver_kafka, SendChannel.SOURCE: _deliver_source}


def _load(config_path: str) -> SignallerConfig:
    from signaller.config import load_config

    try:
        return load_config(config_path, os.environ)
    except (SignallerError, OSError) as exc:
        _fail(f"cannot load {config_path}: {exc}")


def _default_url(settings: SignallerConfig | None) -> str:
    """The API of the sidecar ``settings`` configures (a wildcard host means loopback), else 127.0.0.1:8089."""
    if settings is None:
        return f"http://127.0.0.1:{DEFAULT_HTTP_PORT}"
    host = settings.http.host
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.http.port}"


def _token(token: str | None, settings: SignallerConfig | None) -> str | None:
    if token:
        return token
    if settings is not None and settings.http.token is not None:
        return settings.http.token.reveal()
    return None


def _rejected(signal_id: str, reason: str) -> NoReturn:
    out.print(f"signal {escape(signal_id)} rejected: {escape(reason)}")
    raise typer.Exit(EXIT_REJECTED)


def _fail(message: str) -> NoReturn:
    err.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(EXIT_UNREACHABLE)


# -- status ------------------------------------------------------------------------------------------------


@app.command("status")
def status(
    url: UrlOption = None,
    token: TokenOption = None,
    config: ConfigOption = None,
    watch: Annotated[bool, typer.Option(
        "--watch/--once", help="Refresh every second until every table is completed, skipped or aborted, "
        "or show the state once.")] = True,
    interval: Annotated[float, typer.Option("--interval", hidden=True, min=0.05)] = 1.0,
) -> None:
    """Show the incremental snapshot's progress, a bar per table (GET /snapshots of the HTTP API)."""
    from rich.live import Live

    settings = _load(config) if config else None
    base = url or _default_url(settings)
    secret = _token(token, settings)
    snapshot = _fetch_snapshots(base, secret)
    if not watch or _finished(snapshot):
        out.print(render_snapshots(snapshot))
        return
    with Live(render_snapshots(snapshot), console=out, auto_refresh=False) as live:
        while not _finished(snapshot):
            time.sleep(interval)
            snapshot = _fetch_snapshots(base, secret)
            live.update(render_snapshots(snapshot), refresh=True)


def _fetch_snapshots(url: str, token: str | None) -> dict[str, Any]:
    import httpx

    try:
        response = _request("GET", url, "/snapshots", token)
    except httpx.HTTPError as exc:
        _fail(f"cannot reach the sidecar at {url}: {exc or type(exc).__name__}")
    body = _json(response)
    if response.status_code != 200:
        _fail(_http_problem(url, response, body))
    return body


def _finished(snapshot: dict[str, Any]) -> bool:
    """Every table is completed, skipped or aborted (and, with no table listed, nothing runs)."""
    tables = snapshot.get("tables") or []
    if not tables:
        return not snapshot.get("running", False)
    return all(table.get("state") in TERMINAL_STATES for table in tables)


_STATE_STYLES = {"queued": "dim", "running": "cyan", "paused": "yellow", "completed": "green",
                 "skipped": "magenta", "aborted": "red", "idle": "dim"}


def render_snapshots(snapshot: dict[str, Any]) -> RenderableType:
    """``GET /snapshots`` as a header line and one progress row per table (rich renderables)."""
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    state = "paused" if snapshot.get("paused") else "running" if snapshot.get("running") else "idle"
    header = Text.assemble(
        ("incremental snapshot ", "bold"), (state, _STATE_STYLES.get(state, "")),
        f"  chunk size {snapshot.get('chunk_size', '?')}",
        f"  correlation id {snapshot.get('correlation_id') or '-'}",
    )
    tables = snapshot.get("tables") or []
    if not tables:
        return Group(header, Text("no table queued", style="dim"))
    grid = Table(box=None, pad_edge=False, show_edge=False)
    grid.add_column("table")
    grid.add_column("state")
    grid.add_column("progress")
    grid.add_column("rows", justify="right")
    grid.add_column("%", justify="right")
    grid.add_column("chunk")
    for table in tables:
        rows = int(table.get("rows_emitted") or 0)
        estimate = table.get("estimated_rows")
        progress = table.get("progress")
        table_state = str(table.get("state", "?"))
        done = table_state == "completed"
        if done or progress is not None:
            bar = ProgressBar(total=1.0, completed=1.0 if done else float(progress), width=30)
        else:
            bar = ProgressBar(total=None, width=30)
        estimate_text = f" / ~{estimate:,}" if isinstance(estimate, int) and estimate > 0 else ""
        percent = "100%" if done else f"{float(progress) * 100:.0f}%" if progress is not None else "?"
        chunk = ""
        if table.get("chunk_from") is not None or table.get("chunk_to") is not None:
            chunk = f"({table.get('chunk_from') or '-∞'}, {table.get('chunk_to') or '?'}]"
        if table.get("status"):
            chunk = f"{chunk} {table['status']}".strip()
        grid.add_row(Text(str(table.get("table", "?"))), Text(table_state, _STATE_STYLES.get(table_state, "")),
                     bar, f"{rows:,}{estimate_text}", percent, Text(chunk))
    return Group(header, grid)


def main() -> None:
    """Entry point: run the CLI; a ``SignallerError`` prints its message and exits 2, no traceback.

    The message is printed verbatim: escaped (a value like ``[/x]`` is text, not rich markup), not
    highlighted, and not wrapped, so each configuration problem stays on one line for log readers.
    """
    try:
        app()
    except SignallerError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
