"""ctxconf: conformance suite for the pluggableharness context-provider protocol.

The package reads as data -> engine -> bindings -> reports:

    catalog.py, vectors.py, schemas.py   the data: requirements, rulings, vectors
    wire/                                the wire types, their JSON forms, token counting
    engine/                              drive a role through a binding and judge it
    bindings/                            how an implementation is reached
    reference/                           reference implementations and their mutants
    reports/                             verdict, console, JSON and other outputs
"""

__version__ = "0.1.0"
