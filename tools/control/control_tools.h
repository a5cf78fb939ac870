// Factories of the control tools (finish, exit_loop, load_artifacts) and of
// the tools declared here but run by the harness or the model provider [Tools run elsewhere].
#ifndef TOOLEXEC_TOOLS_CONTROL_CONTROL_TOOLS_H_
#define TOOLEXEC_TOOLS_CONTROL_CONTROL_TOOLS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tools/builtin.h"
#include "tools/runtime/tool.h"

namespace toolexec {

// InvalidArgument if `output_schema` is not a valid JSON Schema.
absl::StatusOr<std::unique_ptr<Tool>> MakeFinishTool(const std::string& output_schema);
std::unique_ptr<Tool> MakeExitLoopTool();
std::unique_ptr<Tool> MakeLoadArtifactsTool();
// InvalidArgument naming the valid names for an unknown one.
absl::StatusOr<std::unique_ptr<Tool>> MakeDeclaredTool(const std::string& name,
                                                       const BuiltinOptions& options);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_CONTROL_CONTROL_TOOLS_H_
