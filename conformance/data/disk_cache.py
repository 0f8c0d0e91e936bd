"""What one process of the suite leaves for the next: parsed YAML files and passed property searches.

Off unless CTXCONF_CACHE names a folder. The test command sets it to its run's temporary folder, so that its
pytest-xdist workers and the hundreds of command lines they start parse each vector file and draw each search
once. An entry is named by a digest of everything its value follows from, so a stale one is never found, only
left unused. What is read back is trusted as the suite's own: a folder of your own only.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

ENV = "CTXCONF_CACHE"


def entry(kind: str, *parts: bytes | str) -> Path | None:
    """Where the entry of this kind for these parts lives, or None when caching is off."""
    root = os.environ.get(ENV)
    if not root:
        return None
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big") + data)  # the lengths keep ("ab", "c") apart from ("a", "bc")
    return Path(root) / kind / digest.hexdigest()[:40]


def read(path: Path | None) -> bytes | None:
    """The entry's bytes; None when caching is off or it is not there (yet)."""
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


def write(path: Path | None, data: bytes) -> None:
    """Keep an entry, whole or not at all for a process reading it meanwhile. A cache that cannot be written
    (a full disk, a folder gone) costs only its speed."""
    if path is None:
        return
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part.write_bytes(data)
        part.replace(path)
    except OSError:
        part.unlink(missing_ok=True)
