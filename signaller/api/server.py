"""Serving the HTTP API: uvicorn on a daemon thread (``serve`` -> ``ApiServer``), never on a non-loopback
address without a bearer token.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI

from signaller.config.build import is_loopback
from signaller.errors import ConfigError, TransientError

log = logging.getLogger("signaller.api.app")


class ApiServerError(TransientError):
    """The HTTP API could not start, or stopped while starting."""


class PortInUseError(ApiServerError):
    """Another process listens on the API's address already."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        super().__init__(f"cannot serve the HTTP API on {address_text(host, port)}: the address is already in use "
                         f"(is another signaller running? choose another signaller.http.port)")


class ApiServer:
    """The HTTP API running in uvicorn on a daemon thread; made by ``serve``.

    ``host``/``port`` are the bound address (the real port when 0 was asked for); ``url`` its base URL.
    """

    def __init__(self, server: uvicorn.Server, sock: socket.socket, host: str) -> None:
        self._server = server
        self._socket = sock
        self.host = host
        self.port: int = sock.getsockname()[1]
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"signaller-api-{self.port}", daemon=True)

    @property
    def url(self) -> str:
        """``http://host:port`` (wildcard hosts shown as the loopback address to connect to)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        return f"http://{address_text(host, self.port)}"

    def start(self) -> None:
        """Start the server thread (``serve`` does it)."""
        self._thread.start()

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self._socket])
        except BaseException as exc:  # uvicorn exits with SystemExit on startup failures
            self._failure = exc
            log.error("the HTTP API on %s stopped: %s", address_text(self.host, self.port), exc)

    def wait_started(self, timeout: float = 10.0) -> None:
        """Block until the server accepts connections; ``ApiServerError`` if it died or took over ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise ApiServerError(f"the HTTP API on {address_text(self.host, self.port)} stopped while starting: "
                                     f"{self._failure!r}")
            if time.monotonic() > deadline:
                raise ApiServerError(f"the HTTP API on {address_text(self.host, self.port)} did not start "
                                     f"within {timeout:g} s")
            time.sleep(0.01)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting requests, let running ones finish (5 s at most), and join the thread. Idempotent."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._server.force_exit = True
                self._thread.join(timeout)
        self._socket.close()

    @property
    def running(self) -> bool:
        """True while the server thread runs."""
        return self._thread.is_alive()


def serve(app: FastAPI, host: str, port: int) -> ApiServer:
    """Bind ``host:port`` (port 0: an ephemeral port) and serve ``app`` on a daemon thread.

    Refuses (``ConfigError``) a non-loopback ``host`` unless ``app`` requires a bearer token (as
    ``create_app(token=...)`` does). Raises ``PortInUseError`` (transient) if the address is taken,
    ``ConfigError`` if it cannot be bound otherwise. uvicorn logs at warning level and installs no
    signal handlers: the sidecar's supervisor owns SIGTERM/SIGINT. Call ``wait_started`` to block
    until requests are accepted and ``stop`` to shut down.
    """
    if not is_loopback(host) and not getattr(app.state, "bearer_token_required", False):
        raise ConfigError("signaller.http.token", None,
                          f"a bearer token: required because the HTTP API would listen on {host!r}, "
                          f"which is not a loopback address")
    sock = _bind(host, port)
    config = uvicorn.Config(app, host=host, port=sock.getsockname()[1], log_level="warning",
                            timeout_graceful_shutdown=5, server_header=False)
    server = _ThreadServer(config)
    api = ApiServer(server, sock, host)
    api.start()
    return api


class _ThreadServer(uvicorn.Server):
    """uvicorn that never touches signal handlers (it is not the process's main loop)."""

    def install_signal_handlers(self) -> None:  # uvicorn < 0.29 calls this
        return None

    def capture_signals(self) -> Any:  # uvicorn >= 0.29 (a no-op off the main thread already)
        return contextlib.nullcontext()


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise ConfigError("signaller.http.host", host, f"an address of this machine ({exc.strerror})") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(host, port) from exc
        if exc.errno == errno.EACCES:
            raise ConfigError("signaller.http.port", port, f"a port this user may listen on ({exc.strerror})") from exc
        raise ConfigError("signaller.http.host", host,
                          f"an address this machine can listen on ({exc.strerror})") from exc
    return sock


def address_text(host: str, port: int) -> str:
    """``host:port``, IPv6 hosts in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
