"""JUnit XML: one test case per ctxconf case, so CI systems list them. A
baselined failure is skipped with its reason, so the file agrees with the
exit code; each failure names its spec anchor, rulings and rerun command."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conformance.engine.results import ERROR, FAIL, SKIP, XFAIL
from conformance.reports.verdict import Report


def to_xml(report: Report) -> str:
    counts = report.case_counts()
    anchors = {r.id: r.requirement.anchor for r in report.requirements}
    suite = ET.Element("testsuite", name=f"ctxconf {report.role} ({report.binding})", tests=str(len(report.cases)),
                       failures=str(counts.get(FAIL, 0)), errors=str(counts.get(ERROR, 0)),
                       skipped=str(counts.get(SKIP, 0) + counts.get(XFAIL, 0)), time=f"{report.seconds:.3f}")
    properties = ET.SubElement(suite, "properties")
    for name, value in (("verdict", report.verdict_line()), ("partial", report.filtered), ("seed", report.seed)):
        if value is not None:
            ET.SubElement(properties, "property", name=name, value=str(value))
    for case in report.cases:
        element = ET.SubElement(suite, "testcase", classname=case.id.rsplit("/", 1)[0].replace("/", "."),
                                name=case.id.rsplit("/", 1)[-1], time=f"{case.seconds:.4f}")
        status, rerun = report.status_of(case), report.rerun(case)
        about = [f"rulings: {', '.join(case.rulings)}"] if case.rulings else []
        about += [f"rerun: {rerun}"] if rerun else []
        if status == FAIL:
            failed = case.failures()
            ET.SubElement(element, "failure", message=", ".join(sorted({f.requirement for f in failed}))).text = \
                "\n".join([f"{f.requirement} ({anchors.get(f.requirement, 'not in the catalog')}) [{f.where}]: "
                           f"{f.message}" for f in failed] + ([f"and an error: {case.error}"] if case.error else [])
                          + about)
        elif status == ERROR:
            ET.SubElement(element, "error", message="implementation error").text = "\n".join([case.error or ""] + about)
        elif status == XFAIL:
            ET.SubElement(element, "skipped", message="expected failure (baseline): "
                          + "; ".join(report.xfailed[case.id]))
        elif status == SKIP:
            ET.SubElement(element, "skipped", message=case.skipped or "")
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
