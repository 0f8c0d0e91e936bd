"""The JavaScript kernel shim (runners/node/kernel_shim.js) is certified over stdio, and
--trace holds every message of every case it ran."""

import collections
import json
import shutil

import pytest

from conformance.data import paths
from tests.conftest import ctxconf

NODE = shutil.which("node")
SHIM = paths.RUNNERS / "node" / "kernel_shim.js"


@pytest.mark.skipif(NODE is None, reason="node is not installed (apt-get install nodejs); the JavaScript shim needs it")
def test_the_node_kernel_shim_is_conformant_and_traced(tmp_path):
    trace, report = tmp_path / "t.jsonl", tmp_path / "r.json"
    run = ctxconf("kernel", "--stdio", f"{NODE} {SHIM}", "--profile", "ci", "--trace", str(trace),
                  "--report", str(report), timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "verdict: CONFORMANT" in run.stdout
    cases = json.loads(report.read_text())["cases"]
    ran = {c["id"] for c in cases if c["status"] != "skip"}
    assert len(ran) > 50  # the vectors and the property run
    directions = collections.defaultdict(set)
    for line in trace.read_text().splitlines():
        row = json.loads(line)
        assert row["binding"] == "stdio" and row["ts"] and isinstance(row["message"], dict)
        directions[row["case"]].add(row["direction"])
    assert ran <= set(directions), f"cases with no traced message: {sorted(ran - set(directions))}"
    assert all(directions[c] == {"to_impl", "from_impl"} for c in ran)
