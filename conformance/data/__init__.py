"""The bottom floor above the wire forms: where the suite's data lives (paths) and how it is read and checked
on load (schemas, the catalog of requirements and rulings, manifests, golden vectors and their sweeps, the
vectors' shorthand, the provider cases a vector describes). Nothing here talks to an implementation."""
