"""The package's floors (issue 24): each folder of conformance/ imports only from its own floor and the ones
below it, so the flow data -> engine -> bindings -> reports reads from the folder names and a new command, check
or binding has one obvious place. Imports inside functions count too."""

import ast
from pathlib import Path

from conformance.data import paths

# Lowest first. The reference implementations are clients of the bindings' types; the proofs (mutants and
# variants of them) sit above the references they change; commands are what a user runs.
FLOORS = ["wire", "data", "bindings", "reference", "engine", "properties", "reports", "proofs", "commands"]


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("conformance"):
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("conformance")}
    return found


def _floor(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in FLOORS else None


def test_every_module_sits_in_a_floor():
    loose = sorted(p.name for p in paths.PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert loose == [], f"modules outside every floor: {loose}"
    # A folder with no module (a stale __pycache__ a checkout leaves when a folder moves) is no floor.
    folders = {p.name for p in paths.PACKAGE.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    assert folders == set(FLOORS)


def test_no_import_runs_up_a_floor():
    upward = []
    for path in paths.PACKAGE.rglob("*.py"):
        here = path.relative_to(paths.PACKAGE).parts[0]
        if here not in FLOORS or "pb" in path.parts:
            continue
        for module in _imports(path):
            there = _floor(module)
            if there and FLOORS.index(there) > FLOORS.index(here):
                upward.append(f"{path.relative_to(paths.PACKAGE)} imports {module} ({here} -> {there})")
    assert upward == [], "\n".join(sorted(upward))


def test_the_floor_check_sees_an_upward_import(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from conformance.commands import cli\n")
    assert "conformance.commands.cli" in _imports(source) and _floor("conformance.commands.cli") == "commands"
