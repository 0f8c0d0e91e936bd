#!/usr/bin/env bash
# Certify a context provider (or kernel) with ctxconf in CI.
#
# Configured by environment variables (see ci/README.md):
#   CTXCONF_ROLE         provider (default) or kernel
#   CTXCONF_TARGET_KIND  python | stdio | grpc | grpc-cmd | plugin   (required)
#   CTXCONF_TARGET       the target option's value                   (required)
#   CTXCONF_MANIFEST     manifest file (providers)
#   CTXCONF_EXTRA_ARGS   more ctxconf options, split on whitespace
#   CTXCONF_OUT          output directory (default: ctxconf-out)
#   CTXCONF_PIP_SPEC     what to pip install (default: the ctxconf checkout this script sits in,
#                        so a pinned action or include pins the suite too); a version pin or a path
#   CTXCONF_PYTHON       interpreter for the venv (default: python3)
#   CTXCONF_VENV         where to create the venv (default: a temporary directory)
#   CTXCONF_BIN          an existing ctxconf executable; skips the install
# Instead of one target, many (see ci/README.md, "Sharded"):
#   CTXCONF_MATRIX       a matrix file: `ctxconf matrix` certifies every implementation it lists
#   CTXCONF_SHARD        K/N, with CTXCONF_MATRIX: only the K-th of N shards, written to shard-K.json
#   CTXCONF_MERGE        a directory of those shard-K.json files: `ctxconf merge` joins them
# Arguments given to the script are passed to ctxconf after everything else, quoting intact.
#
# Exit code: ctxconf's (0 conformant, 1 not conformant, 2 could not run); 2 also when
# this script cannot set ctxconf up.
set -euo pipefail

role=${CTXCONF_ROLE:-provider}
kind=${CTXCONF_TARGET_KIND:-}
out=${CTXCONF_OUT:-ctxconf-out}
shard=${CTXCONF_SHARD:-}
mode=certify
[[ -n "${CTXCONF_MATRIX:-}" ]] && mode=matrix
[[ -n "${CTXCONF_MERGE:-}" ]] && mode=merge

# exit-code and verdict for the steps after this one (the GitHub action's outputs)
set_outputs() {
    if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
        printf 'exit-code=%s\nverdict=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
    fi
}

fail_setup() {
    echo "ctxconf certify: $*" >&2
    set_outputs 2 error
    exit 2
}

if [[ -n "$shard" && "$mode" != matrix ]]; then
    fail_setup "CTXCONF_SHARD shards a matrix: set CTXCONF_MATRIX too (and not CTXCONF_MERGE)"
fi
if [[ "$mode" == certify ]]; then
    case "$role" in
        provider | kernel) ;;
        *) fail_setup "CTXCONF_ROLE must be provider or kernel, not '$role'" ;;
    esac
    # Without a target ctxconf certifies its own bundled reference: a green badge that says
    # nothing about your code. So the kind is required; an empty CTXCONF_TARGET is passed
    # through and ctxconf rejects it.
    case "$kind" in
        python | stdio | grpc | grpc-cmd | plugin) ;;
        "") fail_setup "set CTXCONF_TARGET_KIND (python, stdio, grpc, grpc-cmd or plugin) and CTXCONF_TARGET" ;;
        *) fail_setup "unknown CTXCONF_TARGET_KIND '$kind' (python, stdio, grpc, grpc-cmd or plugin)" ;;
    esac
fi

if [[ -n "${CTXCONF_BIN:-}" ]]; then
    ctxconf=$CTXCONF_BIN
else
    venv=${CTXCONF_VENV:-$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/ctxconf-venv.XXXXXX")}
    "${CTXCONF_PYTHON:-python3}" -m venv "$venv" || fail_setup "cannot create a venv in $venv"
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    spec=${CTXCONF_PIP_SPEC:-}
    if [[ -z "$spec" ]]; then
        [[ -f "$here/pyproject.toml" ]] || fail_setup "no ctxconf checkout at $here; set CTXCONF_PIP_SPEC"
        spec=$here
    fi
    # pip's cache (PIP_CACHE_DIR, or ~/.cache/pip) is left on: the CI templates keep it between jobs.
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$spec" \
        || fail_setup "pip install $spec failed"
    ctxconf=$venv/bin/ctxconf
fi

mkdir -p "$out"
# no stale results from an earlier run to upload when this one cannot start
rm -f "$out/junit.xml" "$out/summary.md" "$out/report.json" "$out/badge/badge.svg" "$out/badge/badge.json" \
    "$out/matrix.html" "$out/shard-${shard%%/*}.json"
whole=(--markdown "$out/summary.md" --report "$out/report.json")  # what a matrix, or a merge of its shards, writes
case "$mode" in
    certify)
        args=("$role" "--$kind" "${CTXCONF_TARGET:-}")
        [[ -n "${CTXCONF_MANIFEST:-}" ]] && args+=(--manifest "$CTXCONF_MANIFEST")
        ;;
    matrix)
        args=(matrix "$CTXCONF_MATRIX")
        if [[ -n "$shard" ]]; then
            args+=(--shard "$shard" --report "$out/shard-${shard%%/*}.json")
        else
            args+=("${whole[@]}" --html "$out/matrix.html")
        fi
        ;;
    merge)
        shopt -s nullglob
        shards=("$CTXCONF_MERGE"/shard-*.json)
        ((${#shards[@]})) || fail_setup "no shard reports (shard-K.json) in $CTXCONF_MERGE"
        args=(merge "${shards[@]}" "${whole[@]}" --html "$out/matrix.html")
        ;;
esac
if [[ -n "${CTXCONF_EXTRA_ARGS:-}" ]]; then
    read -r -a extra <<<"$CTXCONF_EXTRA_ARGS"
    args+=(${extra[@]+"${extra[@]}"})  # this form survives set -u on an empty array in old bash (macOS)
fi
if (($#)); then args+=("$@"); fi

[[ "$mode" == certify ]] && args+=(--junit "$out/junit.xml" "${whole[@]}" --badge "$out/badge")

status=0
"$ctxconf" "${args[@]}" || status=$?

if [[ -n "${GITHUB_STEP_SUMMARY:-}" && -f "$out/summary.md" ]]; then
    # the blank line ends ctxconf's closing table before whatever a later step appends
    { cat "$out/summary.md"; echo; } >>"$GITHUB_STEP_SUMMARY"
fi

verdict=error  # no report: ctxconf could not run
if [[ "$mode" != certify ]]; then
    # a matrix has a verdict per implementation; its own is whether each got the one its entry expects
    case "$status" in 0) verdict="as expected" ;; 1) verdict="not as expected" ;; esac
elif [[ -f "$out/report.json" ]]; then
    # ctxconf writes the report indented by two, one key a line; no JSON tool needed
    verdict=$(sed -n 's/^  "verdict": "\(.*\)",$/\1/p' "$out/report.json")
    verdict=${verdict:-unknown}
fi
set_outputs "$status" "$verdict"
echo "ctxconf certify: verdict: $verdict (exit $status); results in $out/"
exit "$status"
