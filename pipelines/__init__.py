"""The top layer: the command line, the Dagster code location and the jobs they run.

Importing the package bounds the process's malloc arenas and puts pyarrow's buffers on malloc
(`pipelines.process_memory`) before anything it imports can start a thread or load pyarrow: the command
line and Dagster's processes (code servers, run workers) all begin by importing it. The `dagster` command
has started a thread of its own by then, so its processes keep the two arenas they have (measured with
`dagster definitions validate`)."""

from pipelines.process_memory import arrow_on_malloc, bound_malloc_arenas

bound_malloc_arenas()
arrow_on_malloc()
