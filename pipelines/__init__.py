"""The top layer: the command line, the Dagster code location and the jobs they run.

Importing the package bounds the process's malloc arenas (`pipelines.process_memory`) before anything it
imports can start a thread: the command line and Dagster's processes (code servers, run workers) all begin
by importing it."""

from pipelines.process_memory import bound_malloc_arenas

bound_malloc_arenas()
