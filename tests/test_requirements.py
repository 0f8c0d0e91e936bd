"""The catalog, the rulings and the coverage gate."""

import shutil

import pytest

from conformance.data import catalog as catalog_mod
from tests.conftest import ROOT, ctxconf

SPEC = ROOT.parent / "shared" / "spec" / "upstream"


def test_catalog_sizes_and_shape(catalog):
    kernel = catalog.for_roles(catalog_mod.KERNEL_ROLES)
    provider = catalog.for_roles(catalog_mod.PROVIDER_ROLES)
    assert len(catalog.requirements) >= 80 and len(kernel) >= 40 and len(provider) >= 30
    assert len(catalog.rulings) >= 10
    assert all(r.testable or r.reason for r in catalog.requirements.values())


@pytest.mark.parametrize("heading, anchor", [
    ("`ContextRequest`", "contextrequest"),
    ("Ordering & chaining", "ordering--chaining"),
    ("Stability hint & cache-prefix ordering", "stability-hint--cache-prefix-ordering"),
    ("`Contribute` (the `context-assemble` RPC)", "contribute-the-context-assemble-rpc"),
    ("Required vs. optional support — summary matrix", "required-vs-optional-support--summary-matrix"),
    ("Why a kernel primitive, not a provider-local heuristic", "why-a-kernel-primitive-not-a-provider-local-heuristic"),
])
def test_github_anchor_rules(heading, anchor):
    assert catalog_mod.github_anchor(heading) == anchor


def test_anchors_skip_code_fences_and_number_duplicates():
    markdown = "# Title\n```\n# not a heading\n```\n## Same\n## Same\n"
    assert catalog_mod.anchors_in(markdown) == {"title", "same", "same-1"}


def test_the_kernel_side_has_no_coverage_gap():
    run = ctxconf("requirements", "--role", "kernel")
    assert run.returncode == 0, run.stderr
    assert "K-BUDGET-REJECT" in run.stdout and "GAP" not in run.stdout.split("K-CALLBACK-CHANNEL")[0]


@pytest.mark.skipif(not SPEC.is_dir(), reason="the spec copy is not next to this checkout")
def test_every_cited_anchor_exists_in_the_spec(catalog):
    assert catalog_mod.missing_anchors(catalog, SPEC) == []


@pytest.mark.skipif(not SPEC.is_dir(), reason="the spec copy is not next to this checkout")
def test_a_renamed_heading_is_reported(tmp_path):
    copy = tmp_path / "spec"
    shutil.copytree(SPEC, copy)
    path = copy / "context" / "data-types.md"
    path.write_text(path.read_text().replace("### Budget mechanics", "### Budget rules"))
    run = ctxconf("requirements", "--role", "kernel", "--spec", str(copy))
    assert run.returncode == 1
    assert "context/data-types.md#budget-mechanics" in run.stderr


def test_a_missing_spec_dir_is_bad_usage(tmp_path):
    run = ctxconf("requirements", "--spec", str(tmp_path / "nowhere"))
    assert run.returncode == 2 and "not a directory" in run.stderr
