"""What a deviation from the spec does, per list (``ADM_SCHEMA_CONTRACT``): the modes and their parsing,
apart from the record contract that applies them (`resources.contract`), so loading the settings does not
load the HTTP client's errors."""

from __future__ import annotations

from enum import StrEnum

from resources.catalog import PAGED_LISTS


class ContractMode(StrEnum):
    """What a deviation from the spec does: fail the read, or be recorded and tolerated."""

    STRICT = "strict"
    TOLERANT = "tolerant"


def parse_modes(text: str) -> tuple[ContractMode, dict[str, ContractMode]]:
    """``tolerant`` or ``strict``, optionally followed by per-list modes (``tolerant,users=strict``, lists
    named as in `resources.catalog`): the default mode and the mode of each list named. Raises
    ValueError naming what is not understood."""
    default = ContractMode.TOLERANT
    overrides: dict[str, ContractMode] = {}
    for part in (part.strip().lower() for part in text.split(",") if part.strip()):
        name, _, mode = part.rpartition("=")
        if mode not in set(ContractMode):
            raise ValueError(f"{mode!r} is neither strict nor tolerant")
        if not name:
            default = ContractMode(mode)
        elif name in PAGED_LISTS:
            overrides[name] = ContractMode(mode)
        else:
            raise ValueError(f"{name!r} is not a list ({', '.join(PAGED_LISTS)})")
    return default, overrides
