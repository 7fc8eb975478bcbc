"""The ``signaller`` command line. Wiring only: each command delegates to a package."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from signaller.devstack import Stack, StackStatus
from signaller.errors import SignallerError

app = typer.Typer(no_args_is_help=True, add_completion=False, help="PostgreSQL → Kafka CDC sidecar.")
stack_app = typer.Typer(no_args_is_help=True, help="The local PostgreSQL + Kafka + Spark stack (no Docker).")
app.add_typer(stack_app, name="stack")
console = Console(stderr=True)


@app.command("run")
def run(config: str = typer.Option(None, "--config", "-c", help="Debezium connector JSON or .properties file; "
                                   "SIGNALLER_* environment variables override it.")) -> None:
    """Run the sidecar: capture changes and publish them to Kafka until SIGTERM."""
    import os

    from signaller.config import load_config
    from signaller.runtime.capture import CaptureLoop
    from signaller.runtime.logging_setup import configure_logging
    from signaller.runtime.supervisor import Supervisor

    configure_logging()
    settings = load_config(config, os.environ)
    supervisor = Supervisor(lambda: CaptureLoop(settings))
    supervisor.install_signal_handlers()
    raise typer.Exit(supervisor.run())


@app.command("demo")
def demo(rows: int = typer.Option(2000, help="rows to insert before updates and deletes")) -> None:
    """Run the whole pipeline on the local stack and print a DEMO OK verdict."""
    from signaller.devstack.demo import run_demo

    raise typer.Exit(run_demo(rows))


@stack_app.command("up")
def stack_up(spark: bool = typer.Option(True, help="Also resolve Spark's Delta/Kafka jars.")) -> None:
    """Start PostgreSQL and Kafka (reusing running ones) and resolve Spark's jars."""
    from signaller.devstack import Stack

    stack = Stack()
    with console.status("starting the local stack"):
        started = stack.up(with_spark=spark)
    _print_status(stack)
    console.print(f"started: {', '.join(started) or 'nothing (already running)'}")


@stack_app.command("down")
def stack_down() -> None:
    """Stop the local PostgreSQL and Kafka."""
    from signaller.devstack import Stack

    stopped = Stack().down()
    console.print(f"stopped: {', '.join(stopped) or 'nothing was running'}")


@stack_app.command("status")
def stack_status() -> None:
    """Show what runs where; exit 1 if a service is down."""
    from signaller.devstack import Stack

    status = _print_status(Stack())
    if not (status.postgres_up and status.kafka_up):
        raise typer.Exit(1)


def _print_status(stack: Stack) -> StackStatus:
    status = stack.status()
    marks = {True: "[green]up[/green]", False: "[red]down[/red]"}
    console.print(f"postgres   {marks[status.postgres_up]}  {status.details['postgres']}")
    console.print(f"kafka      {marks[status.kafka_up]}  {status.details['kafka']}")
    console.print(f"spark jars {marks[status.spark_jars]}  {status.details['spark jars']}")
    console.print(f"logs       {status.details['logs']}")
    return status


def main() -> None:
    """Entry point: run the CLI; a ``SignallerError`` prints its message and exits 2, no traceback."""
    try:
        app()
    except SignallerError as exc:
        console.print(f"[red]error:[/red] {exc}")
        sys.exit(2)


if __name__ == "__main__":
    main()
