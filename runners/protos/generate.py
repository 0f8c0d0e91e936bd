"""Regenerate the suite's protobuf/gRPC Python code from runners/protos.

    python runners/protos/generate.py            # rewrite conformance/wire/pb
    python runners/protos/generate.py --check    # exit 1 if it is stale

protoc writes absolute imports (`from pluggableharness.content.v1 import ...`);
they are rewritten to live under `conformance.wire.pb` so the suite never
claims the top-level `pluggableharness` package a user's own code may own.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.util
import re
import sys
import tempfile
from pathlib import Path

PROTO_ROOT = Path(__file__).resolve().parent
# The generated code lives in the package (conformance/wire/pb), wherever this folder sits.
OUT = Path(importlib.util.find_spec("conformance.wire").submodule_search_locations[0]) / "pb"
PACKAGE = "conformance.wire.pb"
_IMPORT = re.compile(r"^from (pluggableharness|ctxconf|plugin)(\.[\w.]+)? import", re.M)


def generate(out: Path) -> None:
    import grpc_tools
    from grpc_tools import protoc

    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))
    include = Path(grpc_tools.__file__).parent / "_proto"
    args = ["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out}",
            f"--grpc_python_out={out}", *protos]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    for path in out.rglob("*.py"):
        text = _IMPORT.sub(lambda m: f"from {PACKAGE}.{m.group(1)}{m.group(2) or ''} import",
                           path.read_text())
        path.write_text(text)
    for folder in [out, *[p for p in out.rglob("*") if p.is_dir() and p.name != "__pycache__"]]:
        (folder / "__init__.py").touch()


def _sources(folder: Path) -> set[Path]:
    return {p.relative_to(folder) for p in folder.rglob("*.py") if "__pycache__" not in p.parts}


def stale_files(current: Path, fresh: Path) -> list[str]:
    names = _sources(fresh) | _sources(current)
    return sorted(str(n) for n in names
                  if not (current / n).exists() or not (fresh / n).exists()
                  or not filecmp.cmp(current / n, fresh / n, shallow=False))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args()
    if not args.check:
        OUT.mkdir(parents=True, exist_ok=True)
        generate(OUT)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        stale = stale_files(OUT, Path(tmp))
    for name in stale:
        print(f"stale: conformance/wire/pb/{name}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
