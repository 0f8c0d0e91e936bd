"""Vector files are validated when loaded: a mistake is an InputError naming
the file and the field, never a silently weaker test."""

from pathlib import Path

import pytest
import yaml

from conformance.data import vectors
from conformance.data.schemas import InputError

GOOD = {
    "id": "kernel/area/case", "title": "A case", "requirements": ["K-TOKEN-BUDGET"],
    "setup": {"models": [{"id": "m", "context_window": 100, "reserved_output": 1, "system_overhead": 1}],
              "primary_model": "m",
              "providers": [{"name": "a", "capabilities": {"default_token_budget": 5, "stability": "STABILITY_STATIC"}}]},
    "turns": [{"assemble": {"session_id": "s", "turn_id": "t", "model": "m"},
               "expect": {"K-TOKEN-BUDGET": {"requests": {"a": {"token_budget": 5}}}}}],
}


def _write(root: Path, doc, name="area/case.yaml") -> Path:
    path = root / "kernel" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, allow_unicode=True))
    return path


def _mutated(**changes):
    doc = yaml.safe_load(yaml.safe_dump(GOOD))
    for dotted, value in changes.items():
        target, *path, last = [doc, *dotted.split("__")]
        for key in path:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = value
    return doc


def test_a_good_vector_loads(catalog, tmp_path):
    _write(tmp_path, GOOD)
    [vector] = vectors.load_dir("kernel", catalog, tmp_path)
    assert vector.id == "kernel/area/case" and vector.requirements == ("K-TOKEN-BUDGET",)


@pytest.mark.parametrize("doc, field, words", [
    ("id: [unclosed", None, "not valid YAML: line "),
    (_mutated(title=""), "title", "should be non-empty"),
    (_mutated(requirements=["K-NOPE"]), "requirements[0]", "unknown requirement K-NOPE"),
    (_mutated(rulings=["R-NOPE"]), "rulings[0]", "unknown ruling R-NOPE"),
    (_mutated(requirements=["K-TOKEN-BUDGET", "K-MODEL-TARGET"]), "requirements[1]", "asserts nothing"),
    (_mutated(turns__0__expect={"K-MODEL-TARGET": {"turn_failed": False}}), "turns[0].expect.K-MODEL-TARGET",
     "do not list"),
    (_mutated(id="kernel/area/other"), "id", "must match"),
    (_mutated(setup__primary_model="ghost"), "setup.primary_model", "no model 'ghost'"),
    (_mutated(turns__0__expect={"K-TOKEN-BUDGET": {"requests": {"ghost": {"token_budget": 1}}}}),
     "turns[0].expect.K-TOKEN-BUDGET", "provider 'ghost'"),
    (_mutated(turns__0__expect={"K-TOKEN-BUDGET": {"chain": [{"labl": "x"}]}}),
     "turns[0].expect.K-TOKEN-BUDGET.chain[0]", "labl"),
    (_mutated(turns__0__expect={"K-TOKEN-BUDGET": {}}), "turns[0].expect.K-TOKEN-BUDGET", "non-empty"),
])
def test_a_broken_vector_is_an_input_error(catalog, tmp_path, doc, field, words):
    path = _write(tmp_path, doc)
    with pytest.raises(InputError) as caught:
        vectors.load_dir("kernel", catalog, tmp_path)
    assert caught.value.source == str(path)
    if field:
        assert caught.value.field == field, str(caught.value)
    assert words in str(caught.value)


def test_every_bundled_vector_cites_known_rulings_and_asserts_on_what_it_lists(kernel_vectors, catalog):
    assert len(kernel_vectors) >= 50
    for vector in kernel_vectors:
        assert set(vector.rulings) <= set(catalog.rulings)
