// An MCP server's settings as the daemon's config gives them
// (McpServerConfig, validated by server/config/apply.cc).
#ifndef TOOLEXEC_MCP_CLIENT_OPTIONS_H_
#define TOOLEXEC_MCP_CLIENT_OPTIONS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace toolexec::mcp {

// One server's settings, as the config gives them (validated there).
struct McpServerOptions {
  std::string name;
  std::vector<std::string> command;  // stdio
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd;
  std::string url;  // streamable HTTP
  std::vector<std::pair<std::string, std::string>> headers;
  bool prefix_tool_names = false;
  // Whether the server's annotations (readOnlyHint, ...) are believed.
  bool trusted_annotations = false;
  std::vector<std::string> enabled_tools;
  std::vector<std::string> disabled_tools;
  absl::Duration startup_timeout = absl::Seconds(10);
  absl::Duration call_timeout = absl::ZeroDuration();  // zero = only the batch's
};

}  // namespace toolexec::mcp

#endif  // TOOLEXEC_MCP_CLIENT_OPTIONS_H_
