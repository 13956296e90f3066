"""Settings are decided by the ``ADM_*`` variables when the code location loads, never by a run's config.

Dagster's launchpad pre-fills a run's config with every resource's current values, the browser keeps that
copy, and a re-execution reuses its run's config. Without a guard, a run launched from such a copy would
use a quota, a warehouse or a schema contract the operator has since changed (while a run launched by
GraphQL, a schedule or the CLI uses the new one). So a run whose config gives a resource value other than
the one bound from the settings is refused in one line naming the value; a copy of the current values is
harmless and passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import BaseModel

from models.errors import AuthoritySyncError


class StaleRunConfigError(AuthoritySyncError, ValueError):
    """A run's config sets a resource value the settings no longer give."""


def config_value(value: Any) -> Any:
    """A bound resource value as a run config writes it (an EnvVar as ``{"env": NAME}``)."""
    if isinstance(value, dg.EnvVar):
        return {"env": value.env_var_name}
    if isinstance(value, BaseModel):
        return {name: config_value(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, list | tuple):
        return [config_value(item) for item in value]
    return str(value) if isinstance(value, Path) else value


def stale_values(run_config: Mapping[str, Any], bound: Mapping[str, Any]) -> list[str]:
    """``resource.field: given (settings: bound)`` for each value ``run_config`` sets that differs from
    the resources bound from the settings."""
    given = run_config.get("resources") or {}
    found = []
    for key, section in sorted(given.items()):
        resource = bound.get(key)
        if resource is None or not isinstance(section, Mapping):
            continue
        for field, value in sorted((section.get("config") or {}).items()):
            expected = config_value(getattr(resource, field, None))
            if value != expected:
                found.append(f"{key}.{field}: {value!r} (settings: {expected!r})")
    return found


def refuse_stale_config(run_config: Mapping[str, Any], bound: Mapping[str, Any]) -> None:
    """Raise `StaleRunConfigError` (one line) when the run's config overrides a value of the settings."""
    stale = stale_values(run_config, bound)
    if stale:
        raise StaleRunConfigError(
            f"this run's config overrides settings ({'; '.join(stale)}): settings come from the ADM_* "
            "variables; launch it again with the resources section removed (or the launchpad's config reset)"
        )
