"""Property-based certification: hypothesis strategies for whole scenarios and
the runner that checks every generated one against the invariants."""

# Here rather than in the runner, so that the command line can name them without importing hypothesis.
CASE_IDS = {"kernel": "property/kernel/generated-scenarios", "provider": "property/provider/generated-requests"}
PROFILES = {
    "ci": {"max_examples": 25, "derandomize": True},
    "default": {"max_examples": 60},
    "thorough": {"max_examples": 600},
}
