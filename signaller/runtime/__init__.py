"""The running sidecar: the command line, the capture loop, snapshot wiring, logging and the supervisor."""
