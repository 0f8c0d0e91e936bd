"""Every ruling is held against the readings of the spec it settles: each reading names its proof, a
conforming variant for one the suite accepts and a mutant for one it forbids, and a strict ruling quotes the
text that rules the others out (issue 22)."""

import pytest

from conformance.data import catalog as catalog_mod
from conformance.proofs import kernel_mutants, kernel_variants, provider_mutants, provider_variants
from tests.test_requirements import SPEC

VARIANTS = {**kernel_variants.VARIANTS, **provider_variants.VARIANTS}
MUTANTS = {**kernel_mutants.MUTANTS, **provider_mutants.MUTANTS}


def readings(catalog):
    return [(ruling.id, reading) for ruling in catalog.rulings.values() for reading in ruling.readings]


def test_every_strict_ruling_quotes_what_it_forbids(catalog):
    strict = [r for r in catalog.rulings.values() if r.applies == "strict"]
    assert strict and all(r.forbids and any(not x["accepted"] for x in r.readings) for r in strict)


def test_every_reading_names_a_proof_of_its_side(catalog):
    wrong = []
    for ruling, reading in readings(catalog):
        proof = reading["proof"]
        if proof == "reference" or proof.startswith("none: "):
            continue
        registry = VARIANTS if reading["accepted"] else MUTANTS
        if proof not in registry:
            wrong.append(f"{ruling}: {reading['reading']!r} names {proof}, which is not a "
                         f"{'variant' if reading['accepted'] else 'mutant'}")
    assert wrong == []


def test_the_reference_reading_comes_first(catalog):
    assert all(r.readings[0]["accepted"] for r in catalog.rulings.values() if r.readings)


@pytest.mark.skipif(not SPEC.is_dir(), reason="the spec copy is not next to this checkout")
def test_every_quote_is_in_the_section_it_cites(catalog):
    assert catalog_mod.misquoted(catalog, SPEC) == []


@pytest.mark.skipif(not SPEC.is_dir(), reason="the spec copy is not next to this checkout")
def test_a_quote_the_spec_does_not_have_is_caught(catalog, tmp_path):
    ruling = next(r for r in catalog.rulings.values() if r.forbids)
    forged = catalog_mod.Ruling(**{**ruling.__dict__, "forbids": ({"anchor": ruling.forbids[0]["anchor"],
                                                                     "quote": "words the spec never wrote"},)})
    fake = catalog_mod.Catalog(catalog.spec_revision, catalog.requirements, {ruling.id: forged})
    assert catalog_mod.misquoted(fake, SPEC) == [f"{ruling.id}: {ruling.forbids[0]['anchor']} does not say "
                                                 "'words the spec never wrote'"]
