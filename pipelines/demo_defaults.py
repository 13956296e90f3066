"""Where the local emulator listens and the demo writes, unless told otherwise (options' defaults the
command line shows in ``--help`` without loading the settings)."""

from __future__ import annotations

from pathlib import Path

EMULATOR_HOST, EMULATOR_PORT = "127.0.0.1", 8080
"""Where `authority-sync emulator` (``make emulator``) listens unless told otherwise."""
DEMO_WAREHOUSE = Path("data/demo/warehouse.duckdb")
"""The demo's own warehouse, apart from where production data lives."""
