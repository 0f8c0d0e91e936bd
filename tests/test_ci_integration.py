"""ci/: the certify script run for real (bash, this venv's ctxconf), and the CI templates that call it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CI = ROOT / "ci"
SCRIPT = CI / "certify.sh"
MANIFEST = ROOT / "examples/manifests/filereader.yaml"
CTXCONF = Path(sys.executable).parent / "ctxconf"


def certify(tmp_path: Path, **variables: str) -> tuple[subprocess.CompletedProcess, Path, dict]:
    """Run ci/certify.sh in tmp_path as a CI job would; the output dir has a space to prove the quoting."""
    out = tmp_path / "out dir"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXCONF_", "GITHUB_"))}
    env.update(CTXCONF_BIN=str(CTXCONF), CTXCONF_ROLE="provider", CTXCONF_TARGET_KIND="python",
               CTXCONF_MANIFEST=str(MANIFEST), CTXCONF_OUT="out dir",
               GITHUB_STEP_SUMMARY=str(tmp_path / "step-summary.md"), GITHUB_OUTPUT=str(tmp_path / "output"))
    env.update(variables)
    run = subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    output = tmp_path / "output"
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines()) if output.exists() else {}
    return run, out, outputs


# A few derandomized generated scenarios: fast, and unlike --no-properties (a partial run) they allow a verdict.
FEW_EXAMPLES = "--profile ci --examples 3"


def test_the_reference_provider_certifies(tmp_path):
    run, out, outputs = certify(tmp_path, CTXCONF_TARGET="conformance.reference.filereader:create",
                                CTXCONF_EXTRA_ARGS=FEW_EXAMPLES)
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads((out / "report.json").read_text())["verdict"] == "conformant"
    assert ET.parse(out / "junit.xml").getroot().get("failures") == "0"
    assert json.loads((out / "badge/badge.json").read_text())["schemaVersion"] == 1
    assert (out / "badge/badge.svg").exists()
    assert (tmp_path / "step-summary.md").read_text().startswith((out / "summary.md").read_text())
    assert outputs == {"exit-code": "0", "verdict": "conformant"}


def test_a_failing_provider_fails_the_job_and_still_reports(tmp_path):
    run, out, outputs = certify(tmp_path, CTXCONF_TARGET="conformance.proofs.provider_mutants:IgnoresBudget",
                                CTXCONF_EXTRA_ARGS=FEW_EXAMPLES)
    assert run.returncode == 1, run.stdout + run.stderr
    assert ET.parse(out / "junit.xml").getroot().get("failures") != "0"
    assert "P-WITHIN-BUDGET" in (tmp_path / "step-summary.md").read_text()
    assert outputs == {"exit-code": "1", "verdict": "not conformant"}


def test_an_empty_or_missing_target_is_an_error_not_the_bundled_reference(tmp_path):
    run, out, outputs = certify(tmp_path, CTXCONF_TARGET="")
    assert run.returncode == 2 and "--python" in run.stderr, run.stderr  # ctxconf's own usage error
    assert outputs == {"exit-code": "2", "verdict": "error"} and not (out / "badge/badge.json").exists()
    (tmp_path / "no-kind").mkdir()
    run, _, outputs = certify(tmp_path / "no-kind", CTXCONF_TARGET_KIND="", CTXCONF_TARGET="")
    assert run.returncode == 2 and "CTXCONF_TARGET_KIND" in run.stderr
    assert outputs == {"exit-code": "2", "verdict": "error"}


def _script_variables() -> set[str]:
    return set(re.findall(r"\bCTXCONF_[A-Z_]+", SCRIPT.read_text()))


def test_the_github_action_passes_every_input_to_the_script():
    action = yaml.safe_load((CI / "github/action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    used = " ".join(json.dumps(step) for step in steps)
    unused = [name for name in action["inputs"] if f"inputs.{name}" not in used]
    assert action["inputs"] and unused == []
    run_step = next(step for step in steps if "certify.sh" in step.get("run", ""))
    assert set(run_step["env"]) <= _script_variables()
    assert {"exit-code", "verdict"} <= set(action["outputs"])
    assert any(step.get("uses", "").startswith("actions/upload-artifact@") for step in steps)


def test_the_gitlab_template_fetches_the_suite_and_keeps_junit():
    """Nothing copied into the user's repository: the job clones ctxconf at its ref and runs its script."""
    template = yaml.safe_load((CI / "gitlab/ctxconf.gitlab-ci.yml").read_text())
    job = template[".ctxconf-certify"]
    assert set(job["variables"]) - {"CTXCONF_PROJECT", "CTXCONF_REF", "PIP_CACHE_DIR"} <= _script_variables()
    script = " ".join(job["script"])
    assert "git clone" in script and '--branch "$CTXCONF_REF"' in script and "ctxconf-suite/ci/certify.sh" in script
    assert job["cache"]["paths"] == [".cache/pip"]
    out = job["variables"]["CTXCONF_OUT"]
    assert job["artifacts"]["reports"]["junit"] == f"{out}/junit.xml" and job["artifacts"]["when"] == "always"
    assert job["artifacts"]["paths"] and all(path.startswith(out + "/") for path in job["artifacts"]["paths"])


def test_the_script_installs_the_checkout_it_sits_in_and_certifies_from_a_clean_directory(tmp_path):
    """No CTXCONF_BIN, no CTXCONF_PIP_SPEC: a fresh venv with this checkout installed (dependencies from the
    package index, or pip's cache), as the GitHub action and the GitLab job run it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXCONF_", "GITHUB_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(CTXCONF_TARGET_KIND="python", CTXCONF_TARGET="conformance.reference.filereader:create",
               CTXCONF_MANIFEST=str(MANIFEST), CTXCONF_EXTRA_ARGS=FEW_EXAMPLES, CTXCONF_VENV=str(tmp_path / "venv"))
    run = subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert json.loads((tmp_path / "ctxconf-out" / "report.json").read_text())["verdict"] == "conformant"
    installed = subprocess.run([tmp_path / "venv" / "bin" / "python", "-c", "from conformance.data import paths; "
                                "print(paths.PUBLIC)"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert str(ROOT) not in installed.stdout  # the wheel's own copy of the data, not the checkout's


TWO_ENTRIES = """properties: false
implementations:
  - {{name: ref, role: kernel, binding: python, target: 'conformance.reference.kernel:create'}}
  - {{name: reader, role: provider, binding: python, target: 'conformance.reference.filereader:create',
     manifest: '{manifest}'}}
"""


def test_a_matrix_runs_as_shards_that_a_last_job_merges(tmp_path):
    """The sharded form: each shard job writes shard-K.json into the output dir, the merge job finds them
    there (as a CI's artifacts bring them) and writes the matrix's report, summary and page."""
    (tmp_path / "m.yaml").write_text(TWO_ENTRIES.format(manifest=MANIFEST))
    for k in (1, 2):
        run, out, outputs = certify(tmp_path, CTXCONF_MATRIX="m.yaml", CTXCONF_SHARD=f"{k}/2")
        assert run.returncode == 0 and outputs == {"exit-code": "0", "verdict": "as expected"}, run.stderr
    assert sorted(p.name for p in out.iterdir()) == ["shard-1.json", "shard-2.json"]
    run, out, outputs = certify(tmp_path, CTXCONF_MERGE="out dir")
    assert run.returncode == 0 and outputs == {"exit-code": "0", "verdict": "as expected"}, run.stderr
    names = [i["name"] for i in json.loads((out / "report.json").read_text())["implementations"]]
    assert names == ["ref", "reader"] and (out / "matrix.html").exists()
    assert (tmp_path / "step-summary.md").read_text().startswith((out / "summary.md").read_text())


def test_a_shard_without_a_matrix_or_a_merge_without_shards_is_an_error(tmp_path):
    run, _, outputs = certify(tmp_path, CTXCONF_SHARD="1/2", CTXCONF_TARGET="conformance.reference.kernel:create")
    assert run.returncode == 2 and "CTXCONF_MATRIX" in run.stderr and outputs["verdict"] == "error"
    run, _, outputs = certify(tmp_path, CTXCONF_MERGE=str(tmp_path))
    assert run.returncode == 2 and "no shard reports" in run.stderr and outputs["verdict"] == "error"


def test_the_templates_have_a_sharded_form():
    template = yaml.safe_load((CI / "gitlab/ctxconf.gitlab-ci.yml").read_text())
    shard, merge = template[".ctxconf-matrix-shard"], template[".ctxconf-matrix-merge"]
    assert "CI_NODE_INDEX/$CI_NODE_TOTAL" in " ".join(shard["before_script"])
    assert shard["script"] == merge["script"] == template[".ctxconf-certify"]["script"]
    assert shard["artifacts"]["paths"] == ["ctxconf-out/shard-*.json"] and merge["when"] == "always"
    workflow = yaml.safe_load((CI / "github/example-workflow.yml").read_text())
    assert workflow["jobs"]["matrix-shard"]["strategy"]["matrix"]["shard"] == [1, 2, 3]
    assert workflow["jobs"]["matrix-merge"]["needs"] == "matrix-shard"
