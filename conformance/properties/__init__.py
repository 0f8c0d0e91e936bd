"""Property-based certification: hypothesis strategies for whole scenarios and
the runner that checks every generated one against the invariants."""

# Here rather than in the runner, so that the command line can name them without importing hypothesis.
CASE_IDS = {"kernel": "property/kernel/generated-scenarios", "provider": "property/provider/generated-requests"}
PROFILES = {
    "ci": {"max_examples": 25, "derandomize": True},
    "default": {"max_examples": 60},
    "thorough": {"max_examples": 600},
}
# One scenario in this many switches each dimension of the scenario space to its large range (properties/space.py):
# fewer under ci, which runs inside the test suite and the self-test, on every mutant.
LARGE_SHARE = {"ci": 64, "default": 16, "thorough": 16}
# Whether hypothesis' target phase steers the search toward the boundaries space.targets names. Not under ci:
# the optimiser spends up to half the examples on variations of the few best scenarios, and a run of 25 (or a
# self-test's 300) needs them all for breadth; its boundaries come from the strategies' own constructions.
TARGETED = {"ci": False, "default": False, "thorough": True}
# The work shrinking may do after the first failure (runner.work(): the calls a scenario makes and the text it
# moves); then the simplest failure found so far is the answer. Work, not seconds, so the same seed gives the
# same counterexample on any machine under any load. `--shrink-work 0` reports the failure as first found.
SHRINK_WORK = 2000
