"""docs/variants.md, written from the variants themselves: each freedom, what grants it and the bindings the
self-test certifies it over. `python -m conformance.proofs.table` rewrites it; a test fails when it is stale."""

from __future__ import annotations

import sys
from pathlib import Path

from conformance.proofs import kernel_variants, provider_variants

HEADER = """# The freedoms ctxconf accepts

Where the spec or a ruling leaves a choice, every side of it passes, and each
side is proven by a conforming variant: `ctxconf selftest` certifies every one
and requires it to come out with no failure at all. Each ruling lists the
readings it accepts and forbids, with the variant or mutant that proves each
(`ctxconf explain R-...`). This page is written from the variants
(`python -m conformance.proofs.table`).
"""


def _bindings(cls, role: str) -> str:
    if getattr(cls, "plugins", False):
        return "python, in the plugin-launching mode"
    return "python, stdio, gRPC" if cls.grpc else "python, stdio"


def markdown() -> str:
    out = [HEADER]
    for title, module, role in (("Kernels", "kernel_variants", "kernel"), ("Providers", "provider_variants", "provider")):
        variants = (kernel_variants if role == "kernel" else provider_variants).VARIANTS
        out += [f"## {title} ([`conformance/proofs/{module}.py`](../conformance/proofs/{module}.py))", "",
                "| freedom | granted by | variant | certified over |", "|---|---|---|---|"]
        out += [f"| {cls.freedom.replace('|', '/')} | {cls.grants} | `{name}` | {_bindings(cls, role)} |"
                for name, cls in variants.items()]
        out.append("")
    return "\n".join(out)


PAGE = Path(__file__).resolve().parents[2] / "docs" / "variants.md"

if __name__ == "__main__":
    PAGE.write_text(markdown(), encoding="utf-8")
    print(f"wrote {PAGE}", file=sys.stderr)
