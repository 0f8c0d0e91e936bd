"""Reference implementations written from the spec and the rulings, and
mutants of them that each break one requirement (the suite's self-test)."""
