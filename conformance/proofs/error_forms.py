"""Provider failures in the forms real SDKs send: a google.rpc.ErrorInfo naming
the category, as the upstream SDK attaches, beside the ContextError or instead
of it. A mutant (the ErrorInfo alone) and a variant (both) share them."""

from __future__ import annotations

from conformance.bindings.base import CallFailed
from conformance.wire import errors


def error_info(failure: CallFailed) -> dict:
    """The upstream SDK's detail for a failure: domain, the category as reason, retryable as metadata."""
    context_error = failure.context_error or {}
    return {"@type": f"type.googleapis.com/{errors.ERROR_INFO_TYPE}", "domain": "context.pluggableharness.dev",
            "reason": errors.category_of(context_error) or "unknown",
            "metadata": {"retryable": str(bool(context_error.get("retryable"))).lower()}}


class ReshapesFailures:
    """A provider mixin: every failure of Configure and Contribute passes through reshape()."""

    def reshape(self, failure: CallFailed) -> CallFailed:
        raise NotImplementedError

    def configure(self, request, call):
        try:
            return super().configure(request, call)
        except CallFailed as failure:
            raise self.reshape(failure) from None

    def contribute(self, request, call):
        try:
            return super().contribute(request, call)
        except CallFailed as failure:
            raise self.reshape(failure) from None
