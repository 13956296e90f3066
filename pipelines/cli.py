"""Command line of authority-sync."""

import typer

app = typer.Typer(no_args_is_help=True, help="authority-sync: sync the Authority Delegation Management Service.")
