"""Items spread over worker processes, each holding state of its own for as long as it lives.

    values = pool.run(jobs, Worker, worker_args, items, on_result, lost)

Each process builds `Worker(*worker_args, number)` and is handed one item at a
time (the next goes to whichever worker is free: a slow item holds no other
up), calling `worker.item(index, item)`. When the items run out it calls
`worker.finish()`, whose (index, value) pairs replace values already sent:
what closing a worker's state finds belongs to the item it last served. The
values come back in the items' order, whatever order they finished in;
on_result sees each as it first arrives. An item whose process died or
raised gets lost(index, item, why) instead.

Processes start from a fork server (spawn where there is none), never by
forking this process: it may hold threads (gRPC's, a python binding's) that a
plain fork would copy in an unknown state. Each worker has a pipe of its own,
written synchronously, so that what it sent before dying is never lost in a
buffer.
"""

from __future__ import annotations

import multiprocessing
import signal
import traceback
from multiprocessing.connection import wait
from typing import Any, Callable


def _context():
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["conformance.commands.certify"])  # imported once, by the server
    return context


def _interrupt(signum, frame):
    raise KeyboardInterrupt  # SIGTERM from the parent: unwind, so that the worker's finish() still runs


def _serve(make_worker, worker_args: tuple, pipe) -> None:
    signal.signal(signal.SIGTERM, _interrupt)
    worker = make_worker(*worker_args)
    try:
        while (task := pipe.recv()) is not None:
            index, item = task
            try:
                pipe.send(("value", index, worker.item(index, item)))
            except Exception:
                pipe.send(("error", index, traceback.format_exc(limit=8)))
    except (KeyboardInterrupt, EOFError):  # interrupted, or the parent is gone
        pass
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):  # a second signal must not cut the closing short
            signal.signal(signum, signal.SIG_IGN)
        try:
            for index, value in worker.finish():
                pipe.send(("value", index, value))
            pipe.send(("done", None, None))
        except (BrokenPipeError, OSError):
            pass


def _start(context, jobs: int, make_worker, worker_args: tuple) -> list[list]:
    """[process, our end of its pipe, the index it is on (None: none)] for each worker."""
    workers: list[list] = []
    for number in range(jobs):
        mine, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(make_worker, (*worker_args, number), theirs), daemon=True)
        try:
            process.start()
        except OSError:
            for pipe in (mine, theirs, *(w[1] for w in workers)):
                pipe.close()
            for started, _, _ in workers:
                started.kill()
            raise
        finally:
            theirs.close()
        workers.append([process, mine, None])
    return workers


def run(jobs: int, make_worker: Callable, worker_args: tuple, items: list, on_result: Callable[[Any], None],
        lost: Callable[[int, Any, str], Any]) -> list:
    pending = list(enumerate(items))[::-1]  # popped from the end: the first item first
    values: list = [None] * len(items)
    arrived = [False] * len(items)
    try:
        workers = _start(_context(), jobs, make_worker, worker_args)
    except OSError:  # the fork server's socket path is too long for a deep TMPDIR ("AF_UNIX path too long")
        workers = _start(multiprocessing.get_context("spawn"), jobs, make_worker, worker_args)

    def settle(index: int, value) -> None:
        first, values[index], arrived[index] = not arrived[index], value, True
        if first:
            on_result(value)

    def hand_out(worker) -> None:
        task = pending.pop() if pending else None
        try:
            worker[1].send(task)
        except OSError:  # it died after its last message: the item waits for another worker
            if task is not None:
                pending.append(task)
            task = None
        worker[2] = task[0] if task else None

    def receive(worker) -> bool:
        """One message from the worker; False once it has nothing more to say."""
        try:
            kind, index, value = worker[1].recv()
        except (EOFError, OSError):
            return False
        if kind == "done":
            return False
        settle(index, value if kind == "value" else lost(index, items[index], value))
        if index == worker[2]:
            hand_out(worker)
        return True

    completed = False
    try:
        for worker in workers:
            hand_out(worker)
        live = list(workers)
        while live:
            ready = wait([w[1] for w in live] + [w[0].sentinel for w in live])
            for worker in list(live):
                if worker[1] in ready and receive(worker):
                    continue
                if worker[1] in ready or worker[0].sentinel in ready:
                    while worker[1].poll() and receive(worker):  # whatever it sent before it ended
                        pass
                    worker[0].join()
                    if worker[2] is not None and not arrived[worker[2]]:
                        index = worker[2]
                        settle(index, lost(index, items[index], f"the worker process running it died (exit code "
                                                                f"{worker[0].exitcode})"))
                    live.remove(worker)
        completed = True
    finally:
        for process, _, _ in workers:
            if not completed and process.is_alive():
                process.terminate()  # interrupted: each worker unwinds and closes what it holds (_interrupt)
        for process, pipe, _ in workers:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
            pipe.close()
    for index, item in pending[::-1]:  # every worker gone before these were handed out
        settle(index, lost(index, item, "no worker process was left to run it"))
    return values
