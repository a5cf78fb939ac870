// Design in tool_declarations.h.
#include "server/tool_declarations.h"

#include "mcp/protocol/content.h"
#include "server/convert.h"

namespace toolexec {
namespace {

Json McpTool(const RegisteredTool& t) {
  const ToolSpec& spec = t.tool->spec();
  if (spec.executor != ToolExecutor::kDaemon) return Json();
  // The declared text, as the wire carries it: the compiled document has
  // integral numbers as integers (2.0 as 2).
  auto declared = ParseJson(spec.parameters_schema);
  if (declared.ok()) return mcp::ToMcpTool(t.name, spec, *declared);
  return mcp::ToMcpTool(t.name, spec, t.schema->document());
}

}  // namespace

std::shared_ptr<const ToolDeclarations::Rendered> ToolDeclarations::Of(
    const ToolList& tools) const {
  const ToolRegistry& registry = *tools.registry();
  {
    absl::MutexLock lock(&mu_);
    if (latest_ != nullptr && latest_->generation == registry.generation()) return latest_;
  }
  auto fresh = std::make_shared<Rendered>();
  fresh->generation = registry.generation();
  fresh->grpc.resize(registry.size());
  fresh->mcp.reserve(registry.size());
  for (const auto& t : registry.tools()) {
    ToProto(*t, &fresh->grpc[t->position]);
    fresh->mcp.push_back(McpTool(*t));
  }
  absl::MutexLock lock(&mu_);
  // Generations only grow: never replace a newer rendering by an older one.
  if (latest_ == nullptr || latest_->generation < fresh->generation) latest_ = fresh;
  return fresh;
}

}  // namespace toolexec
