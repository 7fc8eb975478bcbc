"""The sidecar's HTTP API (FastAPI on uvicorn) and its Prometheus metrics.

``create_app(control, token=..., metrics=...)`` builds the application over the capture loop's
``SidecarControl``; ``serve(app, host, port)`` runs it on a daemon thread and returns an
``ApiServer`` (``wait_started``, ``stop``); ``MetricsRegistry`` holds the metrics it exposes.
"""

from signaller.api.app import create_app
from signaller.api.metrics import MetricsRegistry
from signaller.api.server import ApiServer, ApiServerError, PortInUseError, serve

__all__ = ["ApiServer", "ApiServerError", "MetricsRegistry", "PortInUseError", "create_app", "serve"]
