"""The self-test's two halves: mutants, each breaking one requirement, which
the suite must catch; and conforming variants, each taking a freedom the spec
or a ruling allows, which the suite must pass."""
