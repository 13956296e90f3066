"""The README's table of settings, rendered from the fields of `pipelines.settings.SyncSettings`: each row
is a field's variable, default, what it accepts and its description, so a setting is documented where it
is declared. ``python -m pipelines.settings_doc --write`` (``make dictionary``) rewrites the README's
section; a test checks it is current."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from enum import Enum
from pathlib import Path

from pydantic.fields import FieldInfo

from pipelines.settings import SyncSettings, accepts, variable_of
from warehouse.dictionary_page import with_section

README = Path(__file__).resolve().parents[1] / "README.md"
MARKERS = ("<!-- settings:start -->", "<!-- settings:end -->")
HEADER = "| variable | default | accepts | meaning |\n|---|---|---|---|\n"


def settings_table(model: type[SyncSettings] = SyncSettings) -> str:
    """One row per setting read from a variable, in the order the model declares them."""
    rows = []
    for name, field in model.model_fields.items():
        accepted = accepts(field)
        if accepted is None:
            continue  # derived from another setting (tenant_names, from ADM_TENANTS)
        default = accepted.shown_default or _default(field)
        text = accepted.text.replace("<", "&lt;")  # acme=<uuid> is no HTML tag
        rows.append(f"| `{variable_of(name)}` | {default} | {text} | {field.description or ''} |\n")
    return HEADER + "".join(rows)


def _default(field: FieldInfo) -> str:
    """A field's default as the table shows it: — when there is none."""
    value = field.get_default(call_default_factory=True)
    if value is None or value == [] or value == {}:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Enum | Path | str):
        return f"`{value.value if isinstance(value, Enum) else value}`"
    return f"{value:g}" if isinstance(value, float) else str(value)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table, or with ``--write`` put it into the README's section."""
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.settings_doc", description="Render the README's table of settings."
    )
    parser.add_argument("--write", action="store_true", help=f"rewrite the settings section of {README}")
    table = settings_table()
    if not parser.parse_args(argv).write:
        sys.stdout.write(table)
        return 0
    README.write_text(with_section(README.read_text(encoding="utf-8"), table, MARKERS), encoding="utf-8")
    print(f"{README}: settings section rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
