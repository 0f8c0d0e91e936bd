"""ctxconf: conformance suite for the pluggableharness context-provider protocol.

The package's floors, lowest first; each imports only from its own and those
below it (tests/test_floors.py):

    wire/         the wire types, their JSON forms, error categories, token counting
    data/         where the data lives (top-level schemas/, vectors/, runners/) and how it is read and checked
    bindings/     how an implementation is reached: in-process, stdio, gRPC, plugin launch
    reference/    the bundled reference kernel and providers
    engine/       drive a role through a binding and judge what it did
    properties/   generated scenarios (hypothesis) over the same engine
    reports/      verdict, console, JSON, JUnit, HTML and the other outputs
    proofs/       mutants and conforming variants of the references, for the self-test
    commands/     what a user runs: the CLI, certification, explain, matrix, selftest, mutation analysis
"""

__version__ = "0.1.0"
