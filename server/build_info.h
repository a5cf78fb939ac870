// What build of toolexec this is: printed by `toolexecd --version` and
// `toolexec --version`, exported as the toolexec_build_info metric and given to
// MCP peers as the implementation version. Defined in a file the build writes
// (cmake/build_info.cmake).
#ifndef TOOLEXEC_SERVER_BUILD_INFO_H_
#define TOOLEXEC_SERVER_BUILD_INFO_H_

#include <string>

#include "absl/strings/string_view.h"

namespace toolexec {

struct BuildInfo {
  const char* version;     // the project's version, e.g. "0.1.0"
  const char* commit;      // git commit (12 hex digits, "-dirty" if changed) or "unknown"
  const char* build_type;  // CMAKE_BUILD_TYPE, e.g. "RelWithDebInfo"
};

const BuildInfo& GetBuildInfo();

// "toolexecd 0.1.0 (commit 75fe898abcde, RelWithDebInfo build)".
inline std::string VersionLine(absl::string_view program) {
  const BuildInfo& b = GetBuildInfo();
  std::string line(program);
  line.append(" ").append(b.version).append(" (commit ").append(b.commit).append(", ");
  line.append(b.build_type).append(" build)");
  return line;
}

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_BUILD_INFO_H_
