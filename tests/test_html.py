"""The HTML report (`--html`, issue 14): autoescaped, self-contained, and rendered by a real headless
browser without console errors, with the failing requirement visible; a screenshot goes to the CI
artifacts. The browser checks are proven able to fail on pages built to fail them."""

import re

import pytest

from conformance.data import catalog as catalog_mod
from conformance.engine.results import CaseResult, Finding
from conformance.reports import html
from conformance.reports.verdict import build
from tests import browser
from tests.conftest import ctxconf

MUTANT = "conformance.proofs.kernel_mutants:PerSectionBudget"


@pytest.fixture(scope="session")
def failing_page(tmp_path_factory, run_once):
    """A real certification with a failing MUST: a mutant that judges each section against the budget alone
    (certified once per pytest run)."""
    def certify():
        page = tmp_path_factory.mktemp("html") / "report.html"
        return page, ctxconf("kernel", "--python", MUTANT, "-k", "kernel/budget/", "--html", str(page))
    page, run = run_once("tests/test_html.py failing page", certify)
    assert run.returncode == 1 and f"wrote {page}" in run.stdout, run.stdout + run.stderr
    return page


def _report(message: str, rulings=("R-BUDGET-PER-PROVIDER",)):
    case = CaseResult("kernel/budget/x", "a case", ("K-BUDGET-REJECT",), tuple(rulings),
                      [Finding("K-BUDGET-REJECT", False, message, "turn 1")], source="/tmp/x.yaml")
    catalog = catalog_mod.load()
    return build(catalog, catalog_mod.KERNEL_ROLES, "kernel", [case], "stdio",
                 {"name": "<b>evil</b> kernel", "version": "1"}, 0.5, rerun_options=["--stdio", "./shim"])


def test_what_the_implementation_sent_is_escaped():
    page = html.to_html(_report("label was <script>alert(1)</script>, expected <img src=x onerror=alert(2)>"))
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "&lt;b&gt;evil&lt;/b&gt; kernel" in page


def test_a_failure_shows_expected_beside_observed_its_rulings_and_the_command_reproducing_it():
    page = html.to_html(_report("chain: list: expected 1 item(s), got 3: [a, b, c]"))
    assert '<pre>chain: list: 1 item(s)</pre></div><div class="observed"><pre>chain: list: 3: [a, b, c]</pre>' in page
    assert 'id="fail-K-BUDGET-REJECT"' in page and 'href="#R-BUDGET-PER-PROVIDER"' in page
    assert 'id="R-BUDGET-PER-PROVIDER"' in page and "Does a provider&#39;s budget bound" in page
    assert "reproduce: ctxconf replay /tmp/x.yaml --stdio ./shim" in page
    assert ('href="https://github.com/pluggableharness/agent/blob/main/docs/specifications/context/data-types.md'
            '#budget-mechanics"') in page


@pytest.mark.parametrize("message, rows", [
    ("turn_failed: expected True, got False", [("turn_failed: True", "turn_failed: False")]),
    ("the chain was [a], expected []", [("[]", "the chain was [a]")]),
    ("its sections count 10; the prompt holds 'x'", [(None, "its sections count 10"), (None, "the prompt holds 'x'")]),
    ("none of the accepted behaviours holds: (1) a: expected 1, got 2 | (2) turn_failed: expected True, got False",
     [("one of the behaviours the rulings accept", "none of the accepted behaviours holds: (1) a: expected 1, "
       "got 2 | (2) turn_failed: expected True, got False")]),
])
def test_messages_split_into_expected_and_observed_only_where_they_say_both(message, rows):
    assert html.side_by_side(message) == rows


def test_the_page_loads_nothing_from_anywhere(failing_page):
    text = failing_page.read_text()
    assert not re.search(r"<(link|img|iframe|object|embed)\b|\bsrc=|@import|url\(", text)
    assert "<style>" in text and 'href="https://github.com/pluggableharness/agent/' in text  # links, not loads


@browser.needs_browser
def test_the_console_check_catches_a_script_error(tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html><body><p>x</p><script>notDefinedAnywhere();</script></body></html>")
    _, console = browser.load(broken, tmp_path / "profile")
    assert any("Uncaught ReferenceError: notDefinedAnywhere" in line for line in console), console


@browser.needs_browser
def test_the_visibility_probe_tells_hidden_from_shown(failing_page, tmp_path):
    hidden = tmp_path / "hidden.html"
    hidden.write_text(failing_page.read_text().replace('id="fail-K-BUDGET-REJECT"',
                                                       'id="fail-K-BUDGET-REJECT" style="display: none"'))
    assert browser.visible(hidden, "fail-K-BUDGET-REJECT", tmp_path / "p1") == "hidden"
    assert browser.visible(hidden, "fail-NO-SUCH-THING", tmp_path / "p2") == "missing"


@browser.needs_browser
def test_a_browser_renders_the_report_without_console_errors_and_shows_the_failure(failing_page, tmp_path):
    dom, console = browser.load(failing_page, tmp_path / "p1")
    assert console == []
    assert re.search(r'id="verdict">no verdict<', dom)
    failure = dom.split('id="fail-K-BUDGET-REJECT"')[1].split('<div class="failure')[0]
    assert "K-BUDGET-REJECT" in failure and "kernel/budget/budget-covers-all-own-sections" in failure
    assert f"reproduce: ctxconf replay vectors/kernel/budget/budget-covers-all-own-sections.yaml " \
           f"--python {MUTANT}" in failure
    assert browser.visible(failing_page, "fail-K-BUDGET-REJECT", tmp_path / "p2") == "visible"
    png = browser.screenshot(failing_page, browser.artifacts() / "html-report-failing-kernel.png", tmp_path / "p3")
    assert png.stat().st_size > 20_000  # a blank page is a few kilobytes
