// Design in tool_declarations.h.
#include "server/tool_declarations.h"

#include "server/convert.h"

namespace toolexec {

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
  for (const auto& t : registry.tools()) ToProto(*t, &fresh->grpc[t->position]);
  absl::MutexLock lock(&mu_);
  // Generations only grow: never replace a newer rendering by an older one.
  if (latest_ == nullptr || latest_->generation < fresh->generation) latest_ = fresh;
  return fresh;
}

}  // namespace toolexec
