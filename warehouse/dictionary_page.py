"""The data dictionary's generated outputs, from a freshly migrated database and `warehouse.dictionary`:
the page ``docs/data-dictionary.md`` (one table per relation, each column with its live type and its
description) and ``warehouse/described_schema.json`` (the same for the tables and views, with what each view
reads, for the Dagster assets' descriptions, column schemas and lineage without migrating a database at
every load).
``python -m warehouse.dictionary_page --write`` (``make dictionary``) rewrites both; a test checks they
are current."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from warehouse.db import open_database
from warehouse.described import DESCRIBED_SCHEMA
from warehouse.dictionary import (
    DictionaryError,
    LiveRelation,
    Relation,
    calls,
    live_schema,
    load,
    source_text,
    view_reads,
)
from warehouse.migrate import migrate

DOCUMENT = Path(__file__).resolve().parents[1] / "docs" / "data-dictionary.md"
START = "<!-- dictionary:start -->"
END = "<!-- dictionary:end -->"
SCHEMA = Path(__file__).resolve().with_name(DESCRIBED_SCHEMA)


def render(relations: dict[str, Relation], live: dict[str, LiveRelation]) -> str:
    """The data dictionary page: one table per relation of the live schema (the dictionary's order,
    then any it lacks), each column with its live type and its description."""
    order = [name for name in relations if name in live] + sorted(set(live) - set(relations))
    return "\n\n".join(_render_relation(relations.get(name), live[name]) for name in order) + "\n"


def _render_relation(described: Relation | None, relation: LiveRelation) -> str:
    kind = {"table": "", "view": " (view)", "macro": " (table macro)"}[relation.kind]
    call = described.call if described else None
    lines = [
        f"## `{relation.name}`{kind}",
        "",
        _markdown(described.description if described else ""),
        "",
        *([f"For example `{call}`.", ""] if call else []),
        # Folded, so that the page's reader sees every relation's description before any column.
        f"<details><summary>{len(relation.columns)} columns</summary>",
        "",
        "| column | type | description |",
        "|---|---|---|",
    ]
    texts = described.columns if described else {}
    lines += [
        f"| `{column.name}` | {_type(column.data_type)} | {_markdown(texts.get(column.name, ''))} |"
        for column in relation.columns
    ]
    return "\n".join([*lines, "", "</details>"])


def _type(data_type: str) -> str:
    # The migrations and the docs say TIMESTAMPTZ; DuckDB reports the long form of the same type.
    return data_type.replace("TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ")


def _markdown(text: str) -> str:
    # Plain text in markdown: | would end a table cell, <record> would read as an HTML tag, * as emphasis.
    return text.replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*")


def with_section(page: str, section: str, markers: tuple[str, str] = (START, END)) -> str:
    """``page`` with the text between ``markers`` (the dictionary's, unless given) replaced by ``section``."""
    first, last = markers
    before, start, rest = page.partition(first)
    _, end, after = rest.partition(last)
    if not start or not end:
        raise DictionaryError(f"the page has no {first} ... {last} section")
    return f"{before}{first}\n{section}{last}{after}"


def rendered() -> tuple[str, str]:
    """The data dictionary page and the described schema (JSON), from a freshly migrated in-memory
    database."""
    relations = load(source_text())
    with open_database() as con:
        migrate(con, from_baseline=False)  # the migrations themselves, which the baseline is rendered from
        live = live_schema(con, calls(relations))
        reads = view_reads(con)
    return render(relations, live), described_schema(live, reads)


def described_schema(live: dict[str, LiveRelation], reads: dict[str, tuple[str, ...]]) -> str:
    """Each table and view of the live schema: its kind, description and columns (name, type,
    description), and for a view the tables and views it reads (its lineage)."""
    relations = {
        name: {
            "kind": relation.kind,
            "description": relation.comment or "",
            "columns": [
                [column.name, _type(column.data_type), column.comment or ""] for column in relation.columns
            ],
            **({"reads": list(reads.get(name, ()))} if relation.kind == "view" else {}),
        }
        for name, relation in sorted(live.items())
        if relation.kind in ("table", "view")
    }
    return json.dumps(relations, indent=1, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the rendered data dictionary, or with ``--write`` put it into its page under ``docs/``."""
    parser = argparse.ArgumentParser(
        prog="python -m warehouse.dictionary_page", description="Render the data dictionary of the warehouse."
    )
    parser.add_argument(
        "--write", action="store_true", help=f"rewrite the generated section of {DOCUMENT} and {SCHEMA}"
    )
    args = parser.parse_args(argv)
    text, schema = rendered()
    if not args.write:
        sys.stdout.write(text)
        return 0
    DOCUMENT.write_text(with_section(DOCUMENT.read_text(encoding="utf-8"), text), encoding="utf-8")
    SCHEMA.write_text(schema, encoding="utf-8")
    print(f"{DOCUMENT}: data dictionary section rewritten; {SCHEMA} rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
