"""How a run read each list, and so how it ran: the words the staging's modes (`warehouse.commit.StagedRun`)
and ``sync_runs.mode`` hold, declared once for the extract that writes them and the commit that reads them."""

FULL, INCREMENTAL, DEPENDENT = "full", "incremental", "dependent"
"""Modes of one entity's read; a dependent read's scope follows its owner's (the revision lists). A run is
full when every list it read was read whole."""
