"""JUnit XML: one test case per ctxconf case, so CI systems list them."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conformance.engine.results import ERROR, FAIL, SKIP
from conformance.reports.verdict import Report


def to_xml(report: Report) -> str:
    counts = report.case_counts()
    suite = ET.Element("testsuite", name=f"ctxconf {report.role} ({report.binding})", tests=str(len(report.cases)),
                       failures=str(counts.get(FAIL, 0)), errors=str(counts.get(ERROR, 0)),
                       skipped=str(counts.get(SKIP, 0)), time=f"{report.seconds:.3f}")
    for case in report.cases:
        element = ET.SubElement(suite, "testcase", classname=case.id.rsplit("/", 1)[0].replace("/", "."),
                                name=case.id.rsplit("/", 1)[-1], time=f"{case.seconds:.4f}")
        if case.status == FAIL:
            failed = case.failures()
            ET.SubElement(element, "failure", message=", ".join(sorted({f.requirement for f in failed}))).text = \
                "\n".join(f"{f.requirement} [{f.where}]: {f.message}" for f in failed)
        elif case.status == ERROR:
            ET.SubElement(element, "error", message="implementation error").text = case.error
        elif case.status == SKIP:
            ET.SubElement(element, "skipped", message=case.skipped or "")
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
