"""Bindings: how an implementation under test is reached. A binding only
moves messages; it never decides conformance."""
