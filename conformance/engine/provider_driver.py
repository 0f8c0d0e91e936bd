"""Drive one provider case through a binding: the suite plays the kernel.

It prepares the case's working directory with the fixture files, calls the
provider step by step, answers its CountTokens callbacks as a kernel resolves
them (kernel-callbacks.md#resolution-algorithm: the named model's tokenizer,
deliberately unlike any local estimate, or the fallback formula) and records
everything. Judging the transcript is provider_checks' job.
"""

from __future__ import annotations

import os
import re
import shutil
import weakref
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from conformance.bindings.base import Binding, CallFailed, HarnessError
from conformance.data.manifest import DANGLING_SOURCE, MISSING_SOURCE, STANDING_IN, Manifest, confined, real_path
from conformance.data.provider_cases import SUITE_MODELS, ProviderCase, Step, contribute_request
from conformance.data.schemas import MAX_FILE_BYTES
from conformance.engine import config_probes
from conformance.engine.case_dir import CaseDir
from conformance.engine.kernel_driver import check_quiet
from conformance.wire import forms, tokens

RESULT_TYPES = {"get_capabilities": "GetCapabilitiesResponse", "contribute": "ContextContribution",
                "describe": "DescribeResponse"}


@dataclass
class CountRecord:
    request: dict
    count: int | None = None
    exact: bool = False
    model: str = ""              # the model_ref id it was counted for; "" when the request named none
    refused: str = ""            # why the suite refused to count


@dataclass
class StepRecord:
    step: Step
    request: dict | None = None  # what the provider was sent (canonical)
    result: dict | None = None   # its answer (canonical)
    failure: dict | None = None  # its error answer: {code, message, context_error}
    counts: list[CountRecord] = field(default_factory=list)
    source_text: str | None = None  # the source fixture as it stood at this step (a contribute step)
    other_texts: list[str] = field(default_factory=list)  # the case's other fixture files then (a JIT reader's)
    unserved: str = ""           # why the step could not be put to this provider (nothing is judged)
    counting_off: bool = False   # the vector had CountTokens fail during this step
    omitted: str = ""            # a configure step's required field left out of this call (missing_required)
    probe: config_probes.ConfigProbe | None = None  # the config a schema_probes step sends (and its follow-up)

    @property
    def where(self) -> str:
        """The step, as a finding names it."""
        if self.step.index < 0:
            return "start (get_capabilities)"
        probe = f" after {self.probe.what}" if self.probe and self.step.kind == "contribute" else \
            f" with {self.probe.what}" if self.probe else ""
        return f"step {self.step.index + 1} ({self.step.kind}" + (f" without {self.omitted!r})" if self.omitted
                                                                  else f"{probe})")
    finished: bool = False       # the step ran to its end (an error may cut it short)


@dataclass
class ProviderTranscript:
    workdir: Path
    capabilities: dict | None = None   # as first declared
    records: list[StepRecord] = field(default_factory=list)
    error: str | None = None
    models: dict = field(default_factory=dict)       # the case's models: id -> tokenizer
    served: set = field(default_factory=set)          # every count served to this process (see Served)
    spoiled: dict = field(default_factory=dict)       # fixture name -> what a spoil step made of it


class Served(set):
    """(text, model id) of every CountTokens answer the suite gave one implementation's process, "" as the
    id of a request that named no model. A count served in an earlier firing, or an earlier case, is as much
    the kernel's as one served now: a provider may keep the figures it was given."""


_SERVED: "weakref.WeakKeyDictionary[Binding, Served]" = weakref.WeakKeyDictionary()


def served_to(binding: Binding) -> Served:
    return _SERVED.setdefault(binding, Served())


class SuiteKernel:
    """The kernel side of the callback channel: CountTokens, and nothing else. It resolves a count as a
    kernel does (kernel-callbacks.md#resolution-algorithm): a model_ref naming one of the case's models gets
    that model's tokenizer, or the fallback with exact false when it has none; a request naming no model gets
    the fallback (R-COUNT-WITHOUT-MODEL-REF); an id the kernel has no model for, NOT_FOUND. Only the id is
    looked at: a ModelTarget carries no model provider name to put in model_ref.provider."""

    def __init__(self, models: dict[str, str] | None = None, served: Served | None = None) -> None:
        self.models = dict(SUITE_MODELS) if models is None else models
        self.served = Served() if served is None else served
        self.counts: list[CountRecord] = []
        self.failing = False

    def __call__(self, call: str, provider: str | None, request: dict) -> dict:
        if call != "CountTokens":
            raise CallFailed("UNIMPLEMENTED", f"the suite's kernel serves only CountTokens, not {call}")
        try:
            parsed = forms.normalize("CountTokensRequest", request)
        except forms.WireFormError as exc:
            self.counts.append(CountRecord(request, refused=str(exc)))
            raise CallFailed("INVALID_ARGUMENT", str(exc)) from None
        record = CountRecord(parsed, model=(parsed.get("model_ref") or {}).get("id", ""))
        self.counts.append(record)
        if not tokens.is_text_only(parsed["content"]):
            record.refused = "CountTokens content must be text blocks only"
            raise CallFailed("INVALID_ARGUMENT", record.refused)
        if self.failing:
            record.refused = "the vector makes CountTokens fail"
            raise CallFailed("UNAVAILABLE", "the kernel's tokenizer is unavailable")
        if record.model and record.model not in self.models:
            record.refused = f"the kernel has no model {record.model!r}"
            raise CallFailed("NOT_FOUND", record.refused)
        tokenizer = self.models[record.model] if record.model else tokens.NO_TOKENIZER
        record.count, record.exact = tokens.count_with(tokenizer, parsed["content"])
        self.served.add((tokens.text_of(parsed["content"]), record.model))
        return {"count": record.count, "exact": record.exact}


def drive(binding: Binding, case: ProviderCase, manifest: Manifest, workdir: Path,
          capabilities: dict | None = None) -> ProviderTranscript:
    """Every step of the case, after a get_capabilities call (unless `capabilities` says what an earlier
    run of the same case was told: a sweep's sub-run)."""
    transcript = ProviderTranscript(workdir, capabilities, models=case.models, served=served_to(binding))
    kernel = SuiteKernel(case.models, transcript.served)
    steps = case.steps if capabilities is not None else (Step("get_capabilities", {}, {}, -1), *case.steps)
    try:
        if workdir.is_symlink() or workdir.parent.is_symlink() or not workdir.is_dir():  # see case_directory
            raise HarnessError(f"the case directory {workdir} was replaced, by an implementation?")
        write_files(workdir, case.files, "files")
        for step in steps:
            for record in step_records(step, transcript, manifest, case):
                transcript.records.append(record)
                kernel.counts = record.counts
                run_step(binding, record, kernel, manifest, case, transcript)
                record.finished = True
        check_quiet(binding)
    except HarnessError as exc:
        transcript.error = str(exc)
        if transcript.records and not transcript.records[-1].finished:
            transcript.records.pop()  # the step it broke off has no outcome to judge: the error is the finding
    return transcript


def step_records(step: Step, transcript: ProviderTranscript, manifest: Manifest, case: ProviderCase) -> list[StepRecord]:
    """One record per call a step makes. A configure step with missing_required makes one call per field the
    provider's config_schema marks required (and the manifest's config sets), each left out in turn; one with
    schema_probes, the calls config_probes draws from that schema."""
    if step.kind == "configure" and step.spec.get("schema_probes"):
        return probe_records(step, transcript, manifest, case)
    if step.kind == "configure" and step.spec.get("bad") in STANDING_IN and not manifest.names_source:
        return [StepRecord(step, unserved=f"the manifest's config puts ${{source}} nowhere, so no {step.spec['bad']} "
                                          "source can stand in it")]
    if step.kind != "configure" or not step.spec.get("missing_required"):
        return [StepRecord(step)]
    config = manifest.configured(transcript.workdir, case.source)
    required = [a["name"] for a in ((transcript.capabilities or {}).get("config_schema") or {}).get("attributes", [])
                if a.get("required") and a.get("name") in config]
    if not required:
        return [StepRecord(step, unserved="its config_schema marks no field of the manifest's config required")]
    return [StepRecord(step, omitted=name) for name in dict.fromkeys(required)]


# The firing after each probe: a prior section, and for a compactor a history longer than any kept tail, past
# the threshold of any share of the ceiling, so that a value it stored is put to use. Its token_budget is the
# default declared before the probe, which the probe's Configure may have made mean something else: the reply's
# form is judged, never whether it fits (provider_checks.Checker.check_contribute and gave_up, R-CONFIG-OFF-SCHEMA).
AFTER_PROBE = {"prior_sections": [{"label": "Earlier context", "text": "Keep answers short and cite the file."}]}
AFTER_PROBE_HISTORY = {"history_tokens": 90, "model_target": {"id": "suite-model", "context_window": 200,
                                                              "effective_ceiling": 100},
                       "conversation_history": [{"role": role, "text": text} for role, text in (
                           ("user", "Please fix the login bug."), ("assistant", "I will read the validator."),
                           ("user", "It is in src/auth."), ("assistant", "The expiry check is inverted."))]}


def probe_records(step: Step, transcript: ProviderTranscript, manifest: Manifest, case: ProviderCase) -> list[StepRecord]:
    """A Configure per probe of the declared schema, each followed by a Contribute (ruling R-CONFIG-OFF-SCHEMA)."""
    schema = (transcript.capabilities or {}).get("config_schema") or {}
    config = manifest.configured(transcript.workdir, case.source)
    compactor = bool((transcript.capabilities or {}).get("compactor"))
    after = Step("contribute", {**AFTER_PROBE, **(AFTER_PROBE_HISTORY if compactor else {})}, {}, step.index)
    probes = config_probes.wrong_values(schema, config)
    return [record for probe in probes for record in (StepRecord(step, probe=probe), StepRecord(after, probe=probe))]


def run_step(binding: Binding, record: StepRecord, kernel: SuiteKernel, manifest: Manifest,
             case: ProviderCase, transcript: ProviderTranscript) -> None:
    step, workdir = record.step, transcript.workdir
    record.source_text = _source_text(case, transcript, read=step.kind == "contribute")
    if step.kind == "contribute":
        record.other_texts = _other_texts(case, transcript)
    record.counting_off = kernel.failing
    if step.kind in ("delete", "write", "spoil"):
        change_files(step, transcript)
        return
    if step.kind == "count_tokens":
        kernel.failing = step.spec == "fail"
        return
    if record.unserved:
        return
    if step.kind == "configure":
        bad = step.spec.get("bad", False)
        if bad == "dangling":
            dangle(workdir)
        config = manifest.configured(workdir, case.source, bad=bad)
        for name, value in manifest.paths(workdir, case.source, bad=bad):
            _confined(workdir, value, f"the manifest's {name}", file=False, spoiled=transcript.spoiled)
        fields = {"config": {k: v for k, v in config.items() if k != record.omitted}}
        if record.probe is not None:  # no path of it is confined: a probe's values are data, not fixtures
            fields = {"config": record.probe.config}  # NO_CONFIG (null): the request carries no config
    elif step.kind == "contribute":
        budget = int((transcript.capabilities or {}).get("default_token_budget", 0))
        request = contribute_request(step, budget, workdir, case.run, case.models, manifest.name)
        # A step may send the request as the wire carries it, zero values left out (a token_budget of 0 too).
        fields = {"request": forms.zeros_omitted("ContextRequest", request) if step.spec.get("omit_zero_values")
                  else request}
        record.request = request
    elif step.kind in ("get_capabilities", "describe"):
        fields = {}
    else:
        raise ValueError(f"step kind {step.kind!r} has no meaning here (the vector schema should have refused it)")
    if step.kind != "contribute":
        record.request = fields.get("config")
    try:
        result = binding.request(step.kind, fields, kernel)
    except CallFailed as failure:
        record.failure = {"code": failure.code, "message": failure.message,
                          "context_error": _context_error(failure.context_error),
                          "details": [d for d in failure.details if isinstance(d, dict)]}
        return
    record.result = _canonical(step.kind, result)
    if step.kind == "get_capabilities" and transcript.capabilities is None:
        transcript.capabilities = record.result.get("capabilities", {})


def _source_text(case: ProviderCase, transcript: ProviderTranscript, read: bool) -> str | None:
    """The source fixture as it stands, when `read` (a contribute step: its reply is judged against it); None
    when it is not a readable file (gone, or spoiled). Its size is checked at every step."""
    if case.source in transcript.spoiled:
        return None
    files, what = CaseDir(transcript.workdir), "the source fixture"
    size = files.size(case.source, what)
    if size is not None and size > MAX_FILE_BYTES:  # no vector file, so no fixture, is larger
        raise HarnessError(f"the source fixture {case.source!r} grew to {size} bytes; the suite "
                           f"wrote at most {MAX_FILE_BYTES} (did the implementation write over it?)")
    data = files.read(case.source, what) if read and size is not None else None
    return data.decode("utf-8", errors="replace") if data is not None else None


def _other_texts(case: ProviderCase, transcript: ProviderTranscript) -> list[str]:
    """The case's fixture files other than the source, as they stand: what a reader that also loads files
    near the ones touched (context/README.md#firing-cadence--jit-loading) may have read."""
    written = [name for step in case.steps if step.kind == "write" for name in step.spec]
    files, texts = CaseDir(transcript.workdir), []
    for name in dict.fromkeys([*case.files, *written]):
        if name == case.source or name in transcript.spoiled:
            continue
        size = files.size(name, "a fixture file")
        data = files.read(name, "a fixture file") if size is not None and size <= MAX_FILE_BYTES else None
        if data is not None:
            texts.append(data.decode("utf-8", errors="replace"))
    return texts


def change_files(step: Step, transcript: ProviderTranscript) -> None:
    """A delete, write or spoil step. What a spoil step made of a file goes before the file is written or
    deleted again."""
    files, field = CaseDir(transcript.workdir), f"steps[{step.index}].{step.kind}"
    names = [step.spec] if step.kind == "delete" else list(step.spec)
    for name in names:
        if name in transcript.spoiled:
            files.remove(name, field)
            del transcript.spoiled[name]
    if step.kind == "write":
        write_files(transcript.workdir, step.spec, field)
    elif step.kind == "spoil":
        for name, how in step.spec.items():
            transcript.spoiled[name] = spoil(files, name, how, field)
    else:
        files.remove(step.spec, field)


# What a not-text spoil appends. Its words let a vector tell a provider that decoded the new content (they are
# in its text) from one that serves what it read before (provider/errors/source-not-text).
NOT_TEXT = b"\n\xff\xfe\x00 and bytes that are not UTF-8: \xc3\x28 \x80\x81\n"


def spoil(files: CaseDir, name: str, how: str, field: str) -> str:
    """Make a fixture file unreadable, a directory, or not text (NOT_TEXT after what it held); what it
    became, in words. Unreadable is a file without read permission, or, where permissions do not stop a
    read (the suite runs as root), a symlink to itself, which no process can open."""
    try:
        if how == "directory":
            files.remove(name, field)
            files.mkdir(name, field)
            return "a directory"
        if how == "not-text":
            files.write(name, (files.read(name, field) or b"") + NOT_TEXT, field)
            return "a file that is not UTF-8 text"
        if files.forbid_reading(name, field):
            return "a file without read permission"
        files.remove(name, field)
        files.symlink(PurePosixPath(name).name, name, field)
        return "a symlink to itself (the suite runs with the right to read any file, so permissions would not do)"
    except OSError as exc:
        raise HarnessError(f"{field}: cannot make {name!r} {how}: {exc.strerror}") from None


def dangle(workdir: Path) -> None:
    """Make DANGLING_SOURCE a symlink to MISSING_SOURCE, which is no file (configure.bad dangling): a name on disk
    that resolves to nothing."""
    files, field = CaseDir(workdir), "configure.bad"
    try:
        files.remove(DANGLING_SOURCE, field)
        files.remove(MISSING_SOURCE, field)
        files.symlink(MISSING_SOURCE, DANGLING_SOURCE, field)
    except OSError as exc:
        raise HarnessError(f"{field}: cannot make {DANGLING_SOURCE!r} a dangling symlink: {exc.strerror}") from None


def write_files(workdir: Path, files: dict[str, str], field: str) -> None:
    """Fixture files (the vector's `field`), never outside the case's directory."""
    case_dir = CaseDir(workdir)
    for name, text in files.items():
        try:
            case_dir.write(name, text.encode("utf-8"), field)
        except OSError as exc:  # the implementation made it, or a folder on the way, unwritable
            raise HarnessError(f"{field}: cannot write {name!r}: {exc.strerror}") from None


def _confined(workdir: Path, name: str, what: str, file: bool = True, spoiled: dict | None = None) -> Path:
    """workdir/name with symlinks followed, checked at the moment of use: the names were checked on load,
    so only a symlink the implementation made can lead outside now, and that is the case's error. A file
    the suite itself spoiled (a symlink to itself) is checked by its name alone."""
    follow = not (spoiled and os.path.relpath(os.path.normpath(workdir / name), workdir) in spoiled)
    target, problem = confined(workdir, name, follow_symlinks=follow)
    if file and target == real_path(workdir):
        problem = f"{name!r} names the case directory itself"
    if problem:
        raise HarnessError(f"{what}: {problem}")
    return target


def case_directory(run_dir: Path, case_id: str) -> Path:
    """The case's own folder. Nothing is created through a symlink an earlier case's implementation put in
    its place (or in place of run_dir): drive() then reports the case as an error."""
    folder = run_dir / re.sub(r"[^a-z0-9-]+", "_", case_id)
    if not (run_dir.is_symlink() or folder.is_symlink()):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            pass  # something not a directory is in the way: drive() reports it
    return folder


def emptied(folder: Path) -> Path:
    """The case's folder with nothing left in it, for the next sub-run of a sweep: what the last run and the
    implementation put there goes, without following a symlink out (drive() reports a replaced folder)."""
    if folder.is_dir() and not folder.is_symlink():
        for entry in os.scandir(folder):
            try:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass  # left for drive() to trip over, as an error of the case
    return folder


def _context_error(data) -> dict | None:
    if not isinstance(data, dict):
        return None
    try:
        return forms.normalize("ContextError", data)
    except forms.WireFormError:
        return {"unreadable": data}


def _canonical(kind: str, result: dict) -> dict:
    if kind not in RESULT_TYPES:
        return result
    try:
        return forms.normalize(RESULT_TYPES[kind], result)
    except forms.WireFormError as exc:
        raise HarnessError(f"the {kind} result is not a valid {RESULT_TYPES[kind]}: {exc}") from None
