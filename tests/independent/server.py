"""A context provider written straight from WIRE.md's facts, sharing nothing
with ctxconf: its own .proto text below, compiled here at start with
grpc_tools into a private folder, its own servicer. If ctxconf's protos were
not wire-compatible with WIRE.md, this provider could not pass.

It listens on $CTXCONF_LISTEN and counts tokens through the KernelCallbackService
at $CTXCONF_KERNEL_CALLBACK. Its one section is a fixed note, cut to the budget
word by word, every figure asked of CountTokens.
"""

import os
import sys
import tempfile
import threading
from concurrent import futures
from pathlib import Path

PROTO = """
syntax = "proto3";
package pluggableharness.context.v1;
import "google/protobuf/struct.proto";

message TextBlock { string text = 1; }
message ContentBlock { oneof block { TextBlock text = 1; } }
message Section {
  string provider = 1; string label = 2; repeated ContentBlock content = 3;
  int64 tokens = 4; int32 stability = 5; bool truncated = 6;
}
message Target { string id = 1; int64 context_window = 2; int64 effective_ceiling = 3; }
message Attribute { string name = 1; int32 type = 2; bool required = 3; }
message Schema { repeated Attribute attributes = 1; }
message Capabilities { int64 default_token_budget = 1; int32 stability = 2; bool compactor = 3; Schema config_schema = 5; }
message GetCapabilitiesRequest {}
message GetCapabilitiesResponse { Capabilities capabilities = 1; }
message ConfigureRequest { google.protobuf.Struct config = 1; }
message ConfigureResponse {}
message ContextRequest {
  string session_id = 1; string turn_id = 3; int64 token_budget = 4; Target model_target = 5;
  repeated Section prior_sections = 8; int64 history_tokens = 10;
}
message ContextContribution { repeated Section sections = 1; }
message Producer { string name = 1; string version = 2; string source = 3; int32 category = 4; uint32 protocol_version = 5; }
message DescribeRequest {}
message DescribeResponse { Producer producer = 1; }
message RenderRequest { bytes payload = 1; string schema_version = 2; }
message ContextError { int32 category = 1; string message = 2; bool retryable = 3; }
message RenderResponse {}
service ContextService {
  rpc GetCapabilities(GetCapabilitiesRequest) returns (GetCapabilitiesResponse);
  rpc Configure(ConfigureRequest) returns (ConfigureResponse);
  rpc Contribute(ContextRequest) returns (ContextContribution);
  rpc Render(RenderRequest) returns (RenderResponse);
  rpc Describe(DescribeRequest) returns (DescribeResponse);
}
"""

KERNEL_PROTO = """
syntax = "proto3";
package pluggableharness.kernel.v1;
message TextBlock { string text = 1; }
message ContentBlock { oneof block { TextBlock text = 1; } }
message CountTokensRequest { repeated ContentBlock content = 1; }
message CountTokensResult { int64 count = 1; bool exact = 2; }
service KernelCallbackService { rpc CountTokens(CountTokensRequest) returns (CountTokensResult); }
"""

NOTE = "This section comes from a provider built from the wire facts alone, sharing no code with the suite."


def compile_protos() -> Path:
    import grpc_tools
    from grpc_tools import protoc

    folder = Path(tempfile.mkdtemp(prefix="independent-proto-"))
    (folder / "independent_context.proto").write_text(PROTO)
    (folder / "independent_kernel.proto").write_text(KERNEL_PROTO)
    include = Path(grpc_tools.__file__).parent / "_proto"
    for name in ("independent_context.proto", "independent_kernel.proto"):
        if protoc.main(["protoc", f"-I{folder}", f"-I{include}", f"--python_out={folder}",
                        f"--grpc_python_out={folder}", name]) != 0:
            sys.exit("protoc failed")
    sys.path.insert(0, str(folder))
    return folder


def main() -> None:
    compile_protos()
    import grpc
    import independent_context_pb2 as ctx
    import independent_context_pb2_grpc as ctx_grpc
    import independent_kernel_pb2 as kern
    import independent_kernel_pb2_grpc as kern_grpc

    kernel = kern_grpc.KernelCallbackServiceStub(grpc.insecure_channel(os.environ["CTXCONF_KERNEL_CALLBACK"]))

    from google.rpc import status_pb2
    from grpc_status import rpc_status

    def fail(context, code, category: int, message: str):
        """A status whose details carry the ContextError, as WIRE.md describes."""
        status = status_pb2.Status(code=code.value[0], message=message)
        status.details.add().Pack(ctx.ContextError(category=category, message=message, retryable=True))
        context.abort_with_status(rpc_status.to_status(status))

    def count(text: str, context) -> int:
        request = kern.CountTokensRequest(content=[kern.ContentBlock(text=kern.TextBlock(text=text))])
        try:
            return kernel.CountTokens(request, timeout=10).count
        except grpc.RpcError as error:  # no honest figure without the kernel: unknown, as INTERNAL
            fail(context, grpc.StatusCode.INTERNAL, 5, f"CountTokens failed: {error.code().name}")

    class Servicer(ctx_grpc.ContextServiceServicer):
        def GetCapabilities(self, request, context):
            schema = ctx.Schema(attributes=[ctx.Attribute(name="greeting", type=1, required=False)])
            return ctx.GetCapabilitiesResponse(capabilities=ctx.Capabilities(
                default_token_budget=200, stability=1, compactor=False, config_schema=schema))

        def Configure(self, request, context):
            return ctx.ConfigureResponse()

        def Contribute(self, request, context):
            words = NOTE.split(" ")
            while words and count(" ".join(words), context) > request.token_budget:
                words.pop()
            sections = list(request.prior_sections)
            if words:
                text = " ".join(words)
                sections.append(ctx.Section(provider="independent", label="Independent note",
                                            content=[ctx.ContentBlock(text=ctx.TextBlock(text=text))],
                                            tokens=count(text, context), stability=1, truncated=text != NOTE))
            return ctx.ContextContribution(sections=sections)

        def Describe(self, request, context):
            return ctx.DescribeResponse(producer=ctx.Producer(name="independent", version="1.0.0",
                                                              source="tests/independent", category=3,
                                                              protocol_version=1))

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    ctx_grpc.add_ContextServiceServicer_to_server(Servicer(), server)
    server.add_insecure_port(os.environ["CTXCONF_LISTEN"])
    server.start()
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    done.wait()
    server.stop(grace=1).wait()


if __name__ == "__main__":
    main()
