"""The project's Dagster instance settings (``pipelines/dagster.yaml``: the run queue, one run per tenant at a
time, the managed loggers), and an instance folder holding them."""

from __future__ import annotations

import shutil
from pathlib import Path

SETTINGS = Path(__file__).with_name("dagster.yaml")
"""The settings file, to use as an instance's ``dagster.yaml`` or to merge into one."""


def instance_home(folder: Path) -> Path:
    """``folder``, made (it must not exist yet), holding the project's instance settings; returned as an
    absolute path, which Dagster requires of ``DAGSTER_HOME``."""
    home = folder.resolve()
    home.mkdir(parents=True)
    shutil.copy(SETTINGS, home / "dagster.yaml")
    return home
