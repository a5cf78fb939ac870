// The registry of tools (S1): names are unique and registration order is kept,
// because that is the order the model sees. Built at start-up, then shared
// read-only.
// Thread safety: Register() is not thread-safe and must finish before the
// registry is shared; every const method may then run concurrently.
#ifndef TOOLEXEC_TOOLS_RUNTIME_TOOL_REGISTRY_H_
#define TOOLEXEC_TOOLS_RUNTIME_TOOL_REGISTRY_H_

#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "tools/runtime/schema.h"
#include "tools/runtime/tool.h"

namespace toolexec {

struct RegisteredTool {
  std::unique_ptr<Tool> tool;
  std::string name;
  // Where it came from, for error messages: "built-in", "example", "config", ...
  std::string source;
  std::string server_name;  // tool->spec().server_name
  std::unique_ptr<CompiledSchema> schema;
  size_t position = 0;  // registration order
};

class ToolRegistry final {
 public:
  // Compiles the tool's schema and appends it. AlreadyExists naming the tool
  // and both sources on a duplicate name (never replaces); InvalidArgument for
  // an empty or malformed name or an invalid schema.
  absl::Status Register(std::unique_ptr<Tool> tool, absl::string_view source);

  // nullptr when no tool has that name.
  const RegisteredTool* Find(absl::string_view name) const;
  // In registration order.
  const std::vector<std::unique_ptr<RegisteredTool>>& tools() const { return tools_; }
  std::vector<std::string> names() const;
  size_t size() const { return tools_.size(); }

  // Empties the registry, handing back its tools in registration order (to
  // register a chosen subset elsewhere).
  std::vector<std::unique_ptr<Tool>> Release();

 private:
  std::vector<std::unique_ptr<RegisteredTool>> tools_;
  absl::flat_hash_map<std::string, const RegisteredTool*> by_name_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_TOOL_REGISTRY_H_
