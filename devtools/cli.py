"""``python -m devtools``: the local stack and the demo, for developers (not shipped in the wheel).

* ``python -m devtools stack up [--no-spark]``: start PostgreSQL, Kafka and the schema registry (Apicurio;
  reusing running ones, waiting until the registry is ready and BACKWARD) and resolve Spark's jars; prints
  what runs where and what it started.
* ``python -m devtools stack down``: stop the local schema registry, Kafka and PostgreSQL (harmless when
  nothing runs).
* ``python -m devtools stack status``: what runs where (the registry's client URL and compatibility);
  exit 1 if a service is down.
* ``python -m devtools demo [--rows N] [--format json|avro] [--source postgres|mariadb]``: the whole pipeline
  on the local stack, ending in ``DEMO OK`` (exit 0) or the reason it failed (exit 1); ``--format avro``: Avro
  records through the stack's schema registry, read by the apply job as Avro (``make demo`` is JSON);
  ``--source mariadb``: the same story on the stack's MariaDB (binlog capture; JSON).

The ``make`` targets ``stack-up``, ``stack-down``, ``stack-status`` and ``demo`` call these. A
``SignallerError`` (a port that is not a number, a service that does not start) prints its message
and exits 2, without a traceback.
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.markup import escape

from devtools.stack import Stack, StackStatus
from signaller.errors import SignallerError

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Developer tools of signaller: the local stack and the demo.")
stack_app = typer.Typer(no_args_is_help=True,
                        help="The local PostgreSQL + Kafka + schema registry + Spark stack (no Docker).")
app.add_typer(stack_app, name="stack")
console = Console(stderr=True)


@app.command("demo")
def demo(rows: int = typer.Option(20000, help="rows seeded before the sidecar starts"),
         record_format: str = typer.Option("json", "--format",
                                           help="record format of the sidecar and the apply job: json or avro "
                                                "(Avro through the stack's schema registry)"),
         source: str = typer.Option("postgres", "--source",
                                    help="database the changes come from: postgres or mariadb (binlog; json only)"),
         ) -> None:
    """Run the whole pipeline on the local stack and print a DEMO OK verdict."""
    from devtools.demo import run_demo, source_format_error

    refused = source_format_error(source, record_format)
    if refused:
        console.print(f"[red]error:[/red] {escape(refused)}")
        raise typer.Exit(2)
    if source == "mariadb":
        from devtools.demo_mariadb import run_mariadb_demo

        raise typer.Exit(run_mariadb_demo(rows))
    raise typer.Exit(run_demo(rows, record_format, source))


@stack_app.command("up")
def stack_up(spark: bool = typer.Option(True, help="Also resolve Spark's Delta/Kafka jars.")) -> None:
    """Start PostgreSQL, Kafka and the schema registry (reusing running ones) and resolve Spark's jars."""
    stack = Stack()
    with console.status("starting the local stack"):
        started = stack.up(with_spark=spark)
    _print_status(stack)
    console.print(f"started: {', '.join(started) or 'nothing (already running)'}")


@stack_app.command("down")
def stack_down() -> None:
    """Stop the local schema registry, Kafka and PostgreSQL."""
    stopped = Stack().down()
    console.print(f"stopped: {', '.join(stopped) or 'nothing was running'}")


@stack_app.command("status")
def stack_status() -> None:
    """Show what runs where; exit 1 if a service is down."""
    status = _print_status(Stack())
    if not status.services_up:
        raise typer.Exit(1)


def _print_status(stack: Stack) -> StackStatus:
    status = stack.status()
    marks = {True: "[green]up[/green]", False: "[red]down[/red]"}
    console.print(f"postgres   {marks[status.postgres_up]}  {status.details['postgres']}")
    console.print(f"mariadb    {marks[status.mariadb_up]}  {status.details['mariadb']}")
    console.print(f"kafka      {marks[status.kafka_up]}  {status.details['kafka']}")
    console.print(f"registry   {marks[status.registry_up]}  {status.details['registry']}")
    console.print(f"spark jars {marks[status.spark_jars]}  {status.details['spark jars']}")
    console.print(f"logs       {status.details['logs']}")
    return status


def main() -> None:
    """Entry point: run the dev CLI; a ``SignallerError`` prints its message and exits 2, no traceback."""
    try:
        app(prog_name="python -m devtools")
    except SignallerError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
        sys.exit(2)
