"""The layers point one way: ``models`` <- ``resources`` <- ``warehouse`` <- ``pipelines``; only the demo
layer imports the emulator, and nothing loads it (or Dagster, for the client) by importing a product module;
every error of the product derives from one base.

The walk reads every import statement of every product module, those inside functions too, so an import
deferred to dodge a cycle still counts."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from models.errors import AuthoritySyncError

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("models", "resources", "warehouse", "pipelines")
"""Lowest first: a module may import its own layer and those before it."""
DEMO_LAYER = frozenset({"pipelines.demo", "pipelines.hr.demo_export"})
"""The modules that start or seed the emulator for the demo and the benchmarks' inputs."""


def _modules() -> Iterator[tuple[str, Path]]:
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            yield ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"), path


@cache
def parsed(module: str) -> ast.Module:
    """The syntax tree of a product module, parsed when a test first asks: every test worker collects this
    file, and parsing every module there cost each of them 1.5 s."""
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


def _imports(tree: ast.Module) -> Iterator[tuple[str, bool]]:
    """Every module the tree imports, and whether at the top of the file (not inside a function)."""
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, id(node) in top) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, id(node) in top


MODULES = dict(_modules())
"""Every product module's name and file."""


def test_the_walk_sees_every_layer() -> None:
    assert {name.split(".")[0] for name in MODULES} == set(LAYERS)
    assert MODULES.keys() >= DEMO_LAYER


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_its_layer_and_those_below(module: str) -> None:
    allowed = LAYERS[: LAYERS.index(module.split(".")[0]) + 1]
    above = sorted(
        imported
        for imported, _ in _imports(parsed(module))
        if imported.split(".")[0] in LAYERS and imported.split(".")[0] not in allowed
    )
    assert above == []


@pytest.mark.parametrize("module", sorted(MODULES.keys() - DEMO_LAYER))
def test_only_the_demo_layer_imports_the_emulator_and_only_on_demand(module: str) -> None:
    imports = list(_imports(parsed(module)))
    assert [name for name, _ in imports if name.split(".")[0] == "emulator"] == []
    assert [name for name, at_top in imports if name in DEMO_LAYER and at_top] == []


def test_warehouse_modules_form_no_cycle() -> None:
    # Before: warehouse.migrate imported warehouse.dictionary, which imported migrate back inside a function.
    graph = {
        module: {name for name, _ in _imports(parsed(module)) if name in MODULES and name != module}
        for module in MODULES
        if module.startswith("warehouse.")
    }
    cycles = [(a, b) for a, targets in graph.items() for b in targets if a in graph.get(b, set())]
    assert cycles == []


STATEMENT = re.compile(
    r"^\s*(SELECT\s|INSERT\s+INTO\s|UPDATE\s+\S+\s+SET\s|DELETE\s+FROM\s|CREATE\s|ALTER\s|DROP\s|WITH\s)"
)
"""The start of a SQL statement (not an HTTP method nor an enum value)."""


@pytest.mark.parametrize("module", sorted(name for name in MODULES if not name.startswith("warehouse")))
def test_every_sql_statement_is_under_warehouse(module: str) -> None:
    # Before: the HR snapshot's reads and the CLI's run summary held SQL in pipelines/.
    statements = [
        node.value
        for node in ast.walk(parsed(module))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and STATEMENT.match(node.value)
    ]
    assert statements == []


def test_loading_the_code_location_and_the_cli_loads_no_emulator() -> None:
    probe = (
        "import sys, pipelines.definitions, pipelines.cli; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'emulator'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_every_error_of_the_product_derives_from_one_base() -> None:
    own = {
        f"{module}.{name}": cls
        for module in sorted(MODULES)
        for name, cls in vars(importlib.import_module(module)).items()
        if isinstance(cls, type) and issubclass(cls, BaseException) and cls.__module__ == module
    }
    assert len(own) > 30  # the walk found the errors (the service's, the warehouse's, the HR sync's, ...)
    assert [name for name, cls in own.items() if not issubclass(cls, AuthoritySyncError)] == []
