"""Property-based certification: hypothesis strategies for whole scenarios and
the runner that checks every generated one against the invariants."""
