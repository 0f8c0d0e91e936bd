"""The README (issue 24) is short, opens with the two set-up commands, and every command in it is one ctxconf
or its pytest plugin accepts as written; every relative link in it and in docs/ leads to a file."""

import re
import shlex
from pathlib import Path

import pytest

from conformance.commands import cli
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
PLUGIN_OPTIONS = {"--ctxconf-kernel", "--ctxconf-provider", "--ctxconf-manifest", "--ctxconf-report", "--ctxconf-args"}


def _commands(text: str) -> list[str]:
    """Every line of every sh block, comments stripped."""
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_it_is_short_and_opens_with_the_two_commands():
    lines = README.splitlines()
    assert len(lines) <= 250
    assert lines[0] == "# ctxconf"
    first = _commands(README)[:2]
    assert first == ["python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/ctxconf kernel",
                     "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && .venv/bin/python -m pytest"]
    assert "python -m pytest" in (ROOT / ".ci" / "run").read_text()  # CI runs the second one


@pytest.mark.parametrize("command", [c for c in _commands(README) if c.startswith("ctxconf ")])
def test_every_ctxconf_command_parses(command, capsys):
    try:
        cli.parse(shlex.split(command)[1:])
    except SystemExit as exc:
        pytest.fail(f"{command!r}: {capsys.readouterr().err}")
    assert not capsys.readouterr().err


@pytest.mark.parametrize("command", [c for c in _commands(README) if c.startswith("pytest ")])
def test_every_pytest_command_uses_the_plugins_options(command):
    words = shlex.split(command)[1:]
    options = {w.split("=")[0] for w in words if w.startswith("--ctxconf")}
    assert options and options <= PLUGIN_OPTIONS, options - PLUGIN_OPTIONS
    role = "kernel" if "--ctxconf-kernel" in words else "provider"
    extra = [w.split("=", 1)[1] for w in words if w.startswith("--ctxconf-args=")]
    cli.parse([role, *(shlex.split(extra[0]) if extra else [])])


def test_the_readme_names_only_folders_that_exist():
    for folder in re.findall(r"^\| `([a-z]+)/` \|", README, re.M):
        assert (ROOT / folder).is_dir(), folder


@pytest.mark.parametrize("page", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))])
def test_every_relative_link_resolves(page):
    path = ROOT / page
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (path.parent / target).exists(), f"{page} links {target}, which does not exist"
