"""conformance/commands/pool.py: items over worker processes, values back in the items' order, a worker's finish()
amending what it sent, and an item whose worker died or raised given its `lost` value."""

from __future__ import annotations

import os

from conformance.commands import pool


class Squares:
    """Squares numbers; 'die' kills its process, 'raise' raises; finish() amends the last item it served."""

    def __init__(self, amend: bool, number: int):
        self.amend, self.last = amend, None

    def item(self, index: int, item):
        if item == "die":
            os._exit(7)
        if item == "raise":
            raise ValueError("no such number")
        self.last = index
        return ("square", item * item, os.getpid())

    def finish(self):
        return [(self.last, ("amended", self.last))] if self.amend and self.last is not None else []


def lost(index, item, why):
    return ("lost", item, why)


def test_values_come_back_in_the_items_order_from_every_worker():
    arrived = []
    values = pool.run(3, Squares, (False,), list(range(30)), arrived.append, lost)
    assert [v[:2] for v in values] == [("square", n * n) for n in range(30)]
    assert sorted(arrived) == sorted(values)  # each once, as it came
    assert os.getpid() not in {v[2] for v in values}  # run elsewhere (how many workers took part is up to them)


def test_an_item_whose_worker_dies_or_raises_is_lost_and_the_rest_still_run():
    items = [1, 2, "raise", 3, "die", 4, 5, 6]
    values = pool.run(2, Squares, (False,), items, lambda value: None, lost)
    assert values[2][0] == "lost" and "ValueError: no such number" in values[2][2]
    assert values[4][:2] == ("lost", "die") and "died (exit code 7)" in values[4][2]
    assert [v[1] for i, v in enumerate(values) if i not in (2, 4)] == [1, 4, 9, 16, 25, 36]


def test_what_finish_returns_replaces_the_value_of_that_item():
    values = pool.run(2, Squares, (True,), list(range(6)), lambda value: None, lost)
    amended = [v for v in values if v[0] == "amended"]
    assert 1 <= len(amended) <= 2 and all(values[v[1]] == v for v in amended)


def test_without_a_fork_server_the_workers_are_spawned(monkeypatch):
    """A fork server needs a unix socket under TMPDIR, and a deep TMPDIR (pytest-xdist's) makes its path too
    long: the workers are then spawned instead."""
    import multiprocessing

    class NoForkServer:
        Pipe = staticmethod(multiprocessing.Pipe)

        class Process(multiprocessing.get_context("spawn").Process):
            def start(self):
                raise OSError("AF_UNIX path too long")

    monkeypatch.setattr(pool, "_context", lambda: NoForkServer)
    values = pool.run(2, Squares, (False,), [3, 4], lambda value: None, lost)
    assert [v[:2] for v in values] == [("square", 9), ("square", 16)]
