"""The sidecar's HTTP API (FastAPI on uvicorn) and its Prometheus metrics.

``create_app(control, token=..., metrics=...)`` builds the application over the capture loop's
``SidecarControl``; ``serve(app, host, port)`` runs it on a daemon thread and returns an
``ApiServer`` (``wait_started``, ``stop``); ``MetricsRegistry`` holds the metrics it exposes.
"""

from signaller.api.app import ApiServer, ApiServerError, PortInUseError, create_app, serve
from signaller.api.metrics import MetricsRegistry

__all__ = ["ApiServer", "ApiServerError", "MetricsRegistry", "PortInUseError", "create_app", "serve"]
