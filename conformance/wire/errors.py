"""The error taxonomy (context/conformance.md#error-taxonomy) in one place."""

from __future__ import annotations

CATEGORIES = ("source_unavailable", "budget_exceeded", "scope_violation", "invalid_request", "unknown")

# The gRPC status code each category travels as.
GRPC_CODE = {
    "source_unavailable": "UNAVAILABLE",
    "budget_exceeded": "FAILED_PRECONDITION",
    "scope_violation": "PERMISSION_DENIED",
    "invalid_request": "INVALID_ARGUMENT",
    "unknown": "INTERNAL",
}

# Categories whose failure isolates the provider (ruling R-ERROR-ISOLATION).
ISOLATING = ("source_unavailable", "budget_exceeded", "scope_violation")

_ENUM_PREFIX = "CONTEXT_ERROR_CATEGORY_"


def enum_name(category: str) -> str:
    return _ENUM_PREFIX + category.upper()


def category_of(context_error: dict | None) -> str | None:
    """The short category name of a canonical ContextError, or None."""
    if not context_error:
        return None
    name = context_error.get("category", "")
    if not name.startswith(_ENUM_PREFIX):
        return None
    short = name[len(_ENUM_PREFIX):].lower()
    return short if short in CATEGORIES else None


ERROR_INFO_TYPE = "google.rpc.ErrorInfo"


def error_info_category(details: list[dict]) -> str | None:
    """The category a google.rpc.ErrorInfo detail names in its reason, as the
    upstream SDK writes it (ruling R-ERROR-DETAIL-FORM), or None."""
    for detail in details:
        if str(detail.get("@type", "")).endswith("/" + ERROR_INFO_TYPE):
            reason = str(detail.get("reason", ""))
            short = reason.removeprefix(_ENUM_PREFIX).lower()
            if short in CATEGORIES:
                return short
    return None


def claimed_category(context_error: dict | None, details: list[dict]) -> str | None:
    """The category a failure claims: its ContextError's, else the one an ErrorInfo names."""
    return category_of(context_error) or error_info_category(details)
