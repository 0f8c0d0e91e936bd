"""`ctxconf matrix FILE.yaml`: certify several implementations in one run.

The file (schema: data/schemas/matrix.json) lists each implementation as its
role, binding and target. Each entry becomes the command line `ctxconf kernel`
or `ctxconf provider` would be given, parsed by the CLI's own parser and
certified by the same function (conformance.commands.certify), so a matrix column
means exactly what a certification of that implementation alone means. The
comparison itself is reports/matrix_report.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from conformance.data import paths
from conformance.commands import certify, shards
from conformance.commands.shards import Shard
from conformance.bindings.base import LaunchError
from conformance.reports import json_report
from conformance.reports.matrix_report import Column, Matrix, build
from conformance.data.schemas import InputError, check, read_yaml

DEMO = paths.EXAMPLES / "matrix.yaml"


@dataclass(frozen=True)
class Entry:
    name: str
    role: str
    argv: tuple[str, ...]  # the options after `ctxconf ROLE`
    target: str
    expect: str | None
    field: str             # where it sits in the file, for messages


COMMANDS = ("stdio", "grpc-cmd", "plugin")  # bindings whose target is a command line


def _relative_to(here: Path, command: str) -> str:
    """The command with each word that names a file beside the matrix file made absolute: paths in a
    matrix resolve against the file, as its manifests do, wherever ctxconf runs from."""
    words = shlex.split(command)
    return shlex.join(str(here / w) if not Path(w).is_absolute() and (here / w).exists() else w for w in words)


def load(path: Path) -> tuple[str, list[Entry]]:
    """The title and the entries of a matrix file; InputError names the file and the field."""
    doc = read_yaml(path)
    check("matrix.json", doc, str(path))
    here = path.resolve().parent
    entries, seen = [], set()
    for i, item in enumerate(doc["implementations"]):
        where = f"implementations[{i}]"
        if item["name"] in seen:
            raise InputError(str(path), f"the name {item['name']!r} is used twice", f"{where}.name")
        seen.add(item["name"])
        if item["role"] == "kernel":
            for key in ("manifest", "callback", "cookie"):
                if key in item:
                    raise InputError(str(path), f"only a provider takes a {key}", f"{where}.{key}")
            if item["binding"] == "plugin":
                raise InputError(str(path), "go-plugin launches providers; a kernel needs another binding",
                                 f"{where}.binding")
        argv = [f"--{item['binding']}", _relative_to(here, item["target"]) if item["binding"] in COMMANDS
                else item["target"]]
        for key in ("manifest", "baseline"):
            if key in item:
                file = here / item[key]  # relative to the matrix file, wherever it is run from
                if not file.is_file():
                    raise InputError(str(path), f"no such file: {file}", f"{where}.{key}")
                argv += [f"--{key}", str(file)]
        for key in ("callback", "cookie", "timeout"):
            if key in item:
                argv += [f"--{key}", str(item[key])]
        for name in item.get("env", ()):
            argv += ["--env", name]
        if doc.get("properties", True):
            argv += ["--profile", doc.get("profile", "ci")]
            argv += ["--shrink-work", str(doc["shrink_work"])] if "shrink_work" in doc else []
        else:
            argv += ["--no-properties"]
        entries.append(Entry(item["name"], item["role"], tuple(argv), item["target"], item.get("expect"), where))
    return doc.get("title", f"ctxconf matrix: {path.name}"), entries


def run(path: Path, parse: Callable[[list[str]], argparse.Namespace],
        shard: Shard | None = None) -> tuple[Matrix, dict | None]:
    """Certify every entry in turn (or a shard's, with the header its report carries); `parse` is the CLI's
    parser, so each run is a `ctxconf ROLE ...`."""
    title, entries = load(path)
    mine = shard.take(entries) if shard else entries
    columns = []
    for n, entry in enumerate(entries, 1):
        if entry not in mine:
            continue
        args = parse([entry.role, *entry.argv])
        try:
            report = certify.role_run(args, entry.role)
        except (InputError, LaunchError) as exc:  # the entry is at fault: say which one
            raise InputError(str(path), str(exc), f"{entry.field} ({entry.name})") from None
        column = Column(entry.name, json_report.to_json(report), entry.target, entry.expect)
        note = " (every case errored)" if not column.ran else "" if column.as_expected is None else \
            " (as expected)" if column.as_expected else f" (NOT as expected: {entry.expect})"
        print(f"[{n}/{len(entries)}] {entry.name} ({entry.role} over {report.binding}): {column.outcome}{note}",
              file=sys.stderr)
        columns.append(column)
    return build(title, columns), shard and _shard_header(path, title, entries, shard)


def _shard_header(path: Path, title: str, entries: list[Entry], shard: Shard) -> dict:
    """Which shard of which matrix: the fingerprint is of the file's implementations as written (paths in it
    stay relative, so runners that check out elsewhere agree)."""
    doc = read_yaml(path)
    return shards.header("matrix", shard, doc.get("profile", "ci") if doc.get("properties", True) else None,
                         None, doc["implementations"], title=title, entries=[e.name for e in entries])


def merge(docs: list[dict]) -> Matrix:
    """The matrix of every shard's columns, in the file's order (shards.load has checked they are one run's)."""
    head = docs[0]["shard"]
    columns = {who["name"]: Column(who["name"], doc["reports"][who["name"]], who["target"], who["expect"])
               for doc in docs for who in doc["implementations"]}
    missing = [name for name in head["entries"] if name not in columns]
    if missing:
        raise InputError("shard reports", f"no shard has the entry {missing[0]!r}, which the matrix lists",
                         "implementations")
    return build(head["title"], [columns[name] for name in head["entries"]])
