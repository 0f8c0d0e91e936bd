"""Shards: the K-th of N disjoint slices of a run's work units, and the checks that a set of shard reports
is one whole run before `ctxconf merge` joins them.

The self-test's units are its subjects (an implementation over one binding), the matrix's its entries. The
units are dealt costliest first, each to the shard with the least cost so far, by a fixed estimate (the
self-test's, per kind of subject; a matrix's entries count one each), so the deal is the same on every
machine and the shards take about as long as each other. Every shard report carries a header
naming its run: the command, N and K, the profile, the seed, the suite version and a fingerprint of the whole
unit list. Reports whose headers differ come from different runs, and the merge refuses them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence, TypeVar

from conformance import __version__
from conformance.data.schemas import InputError

Unit = TypeVar("Unit")
SAME_RUN = ("command", "count", "profile", "seed", "suite_version", "units", "filter")  # must agree across a set
OWN_KEYS = {"selftest": ("units", "filter"), "matrix": ("units", "title", "entries")}  # by the command that wrote it
_SHARD = re.compile(r"(\d+)/(\d+)")


@dataclass(frozen=True)
class Shard:
    index: int  # K, from 1
    count: int  # N

    def take(self, units: Sequence[Unit], cost: Callable[[Unit], float] = lambda unit: 1) -> list[Unit]:
        """This shard's units, in the order given (see deal)."""
        mine = set(deal(units, self.count, cost)[self.index - 1])
        return [unit for i, unit in enumerate(units) if i in mine]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def deal(units: Sequence[Unit], count: int, cost: Callable[[Unit], float]) -> list[list[int]]:
    """The positions of the units each of `count` shards gets: the costliest first (the given order among
    equals), each to the shard with the least cost so far (the first such). Disjoint, covering every unit,
    and the same on every machine; with equal costs, plain turns."""
    shards: list[list[int]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for position in sorted(range(len(units)), key=lambda i: -cost(units[i])):
        least = loads.index(min(loads))
        shards[least].append(position)
        loads[least] += cost(units[position])
    return shards


def parse(text: str) -> Shard:
    """`--shard K/N` (argparse names the option in the error and exits 2)."""
    found = _SHARD.fullmatch(text.strip())
    if not found:
        raise argparse.ArgumentTypeError(f"expected K/N, such as 2/4, got {text!r}")
    index, count = int(found[1]), int(found[2])
    if not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"expected K/N with 1 <= K <= N, got {text!r}")
    return Shard(index, count)


def fingerprint(units: object) -> str:
    """A short digest of the whole unit list (JSON-able), order included."""
    text = json.dumps(units, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def header(command: str, shard: Shard, profile: str, seed: int | None, units: object, **more) -> dict:
    """What a shard report says of itself: which shard of which run."""
    return {"command": command, "index": shard.index, "count": shard.count, "profile": profile, "seed": seed,
            "suite_version": __version__, "units": fingerprint(units), **more}


def load(paths: Sequence[Path]) -> list[tuple[Path, dict]]:
    """The shard reports, checked to be the N shards of one run, each once, in shard order."""
    loaded = [(path, _read(path)) for path in paths]
    first_path, first = loaded[0]
    for path, doc in loaded[1:]:
        for key in SAME_RUN:
            if doc["shard"].get(key) != first["shard"].get(key):
                raise InputError(str(path), f"shard {_name(doc)} is of another run than {first_path} (shard "
                                 f"{_name(first)}): its {key} is {doc['shard'].get(key)!r}, not "
                                 f"{first['shard'].get(key)!r}; merge the shards of one run", "shard")
    by_index: dict[int, Path] = {}
    for path, doc in loaded:
        index = doc["shard"]["index"]
        if index in by_index:
            raise InputError(str(path), f"shard {_name(doc)} is given twice (also {by_index[index]})", "shard")
        by_index[index] = path
    count = first["shard"]["count"]
    missing = [str(k) for k in range(1, count + 1) if k not in by_index]
    if missing:
        raise InputError(str(first_path), f"missing shard {', '.join(missing)} of {count}: a merge needs "
                         f"every shard of the run", "shard")
    return sorted(loaded, key=lambda loaded_one: loaded_one[1]["shard"]["index"])


def _read(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise InputError(str(path), f"not JSON: {exc}") from None
    head = doc.get("shard") if isinstance(doc, dict) else None
    if not isinstance(head, dict) or not all(isinstance(head.get(k), int) for k in ("index", "count")) \
            or not set(OWN_KEYS.get(head.get("command"), ("",))) <= head.keys():
        raise InputError(str(path), "not a shard report (one that `ctxconf selftest --shard K/N --report FILE` "
                         "or `ctxconf matrix --shard K/N --json FILE` writes)", "shard")
    return doc


def _name(doc: dict) -> str:
    return f"{doc['shard']['index']}/{doc['shard']['count']}"
