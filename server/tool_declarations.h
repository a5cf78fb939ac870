// The tools' declarations as toolexecd's transports list them, rendered once
// per registry snapshot (tools/runtime/tool_registry.h) and shared by every
// listing until a newer snapshot is listed: the gRPC ToolDeclaration of each
// tool (ListTools), and the MCP Tool object of each tool the daemon runs
// (tools/list on the MCP endpoint, server/mcp_http.h). A listing only picks
// the caller's tools out of it and
// adds what changes between snapshots' publications (an MCP server that went
// down), so listing converts nothing.
//
// Thread safety: Of() may run on any thread at once. A rendering is
// immutable; it stays alive while anyone holds it, whatever is listed since.
#ifndef TOOLEXEC_SERVER_TOOL_DECLARATIONS_H_
#define TOOLEXEC_SERVER_TOOL_DECLARATIONS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool_registry.h"
#include "toolexec/v1/toolexec.pb.h"

namespace toolexec {

class ToolDeclarations final {
 public:
  // Every tool of one snapshot, by its position in it.
  struct Rendered {
    uint64_t generation = 0;
    std::vector<v1::ToolDeclaration> grpc;
    // mcp::ToMcpTool of the declared schema, as `toolexec mcp` makes it from
    // the wire declaration (so both MCP transports declare a tool alike);
    // null for a tool run elsewhere [Tools run elsewhere]: an MCP client has
    // nobody to run it.
    std::vector<Json> mcp;
  };

  // The rendering of `tools`'s snapshot: cached until a newer one is listed.
  std::shared_ptr<const Rendered> Of(const ToolList& tools) const;

 private:
  mutable absl::Mutex mu_;
  mutable std::shared_ptr<const Rendered> latest_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_TOOL_DECLARATIONS_H_
