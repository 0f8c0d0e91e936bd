"""A real headless browser for the tests of the HTML pages: Debian's Chromium, driven from the command
line only (no driver, no network). `.ci/run` installs it; without it these tests skip."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
# Chromium logs every console message of the page, whatever its level, as a CONSOLE line on stderr
# ("[...:INFO:CONSOLE:12] "message", source: ..." or "CONSOLE(12)"). Our pages log nothing, so any is an error.
_CONSOLE = re.compile(r"^\[[^\]]*:CONSOLE[:(]\d+\)?\] (.*)$", re.MULTILINE)

needs_browser = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium; "
                                   ".ci/run installs it)")


def artifacts() -> Path:
    """Where screenshots go for CI to keep: $CTXCONF_ARTIFACTS, else tests/artifacts (gitignored)."""
    folder = Path(os.environ.get("CTXCONF_ARTIFACTS") or ROOT / "tests" / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    run = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                          *extra, page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def load(page: Path, profile: Path) -> tuple[str, list[str]]:
    """The DOM after the page's scripts ran, and every console message the page produced."""
    run = _chromium(page, profile, "--dump-dom")
    return run.stdout, _CONSOLE.findall(run.stderr)


def screenshot(page: Path, png: Path, profile: Path, size: str = "1280,1800") -> Path:
    _chromium(page, profile, f"--window-size={size}", f"--screenshot={png}")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    return png


def visible(page: Path, element_id: str, profile: Path) -> str:
    """Whether the browser lays the element out where a reader sees it, asked of the browser itself: a copy
    of the page with a probe script appended, whose verdict lands in the dumped DOM."""
    probe = page.with_name(page.stem + ".probe.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", f"""<script>
(function () {{
  var el = document.getElementById({element_id!r}), box = el && el.getBoundingClientRect();
  var style = el && getComputedStyle(el);
  var seen = !el ? "missing" : (box.width > 0 && box.height > 0 && style.visibility === "visible" &&
             el.offsetParent !== null) ? "visible" : "hidden";
  document.body.setAttribute("data-probe", seen);
}})();
</script></body>"""), encoding="utf-8")
    dom, console = load(probe, profile)
    assert not console, console
    found = re.search(r'<body[^>]*data-probe="(\w+)"', dom)
    assert found, "the probe did not run"
    return found.group(1)
