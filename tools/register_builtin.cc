#include "tools/builtin.h"

namespace toolexec {

absl::Status RegisterSelectableBuiltinTools(ToolRegistry& registry, const BuiltinOptions& options) {
  if (absl::Status s = RegisterFileTools(registry, options); !s.ok()) return s;
  if (absl::Status s = RegisterSearchTools(registry, options); !s.ok()) return s;
  if (absl::Status s = RegisterCommandTools(registry, options); !s.ok()) return s;
  if (absl::Status s = RegisterMemoryTool(registry, options); !s.ok()) return s;
  return RegisterControlTools(registry, options);
}

absl::Status RegisterBuiltinTools(ToolRegistry& registry, const BuiltinOptions& options) {
  if (absl::Status s = RegisterSelectableBuiltinTools(registry, options); !s.ok()) return s;
  return RegisterDeclaredTools(registry, options);
}

}  // namespace toolexec
