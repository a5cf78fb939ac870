// Included before any RapidJSON header (json.h does it): a misused RapidJSON
// call (GetString() on a number, ...) throws std::runtime_error instead of
// being undefined behaviour in release builds. The runner turns an exception
// thrown by a tool into an error result, so such a bug fails one call, not the
// daemon. The check costs a branch: RapidJSON asserts in nearly every
// accessor and every write, so nothing is built unless it fails. valijson's
// RapidJSON adapter, which would define its own (building a std::string of
// the file name at every assert), is included after this header
// (tools/runtime/schema_regex.h), so every translation unit sees this one.
#ifndef TOOLEXEC_TOOLS_RUNTIME_RAPIDJSON_CONFIG_H_
#define TOOLEXEC_TOOLS_RUNTIME_RAPIDJSON_CONFIG_H_

#include <stdexcept>
#include <string>

namespace toolexec::internal {

[[noreturn]] inline void RapidJsonAssertFailed(const char* file, int line) {
  throw std::runtime_error(std::string("assertion failed; file: ") + file +
                           "; line: " + std::to_string(line));
}

}  // namespace toolexec::internal

#define RAPIDJSON_ASSERT(x) \
  ((x) ? static_cast<void>(0) : ::toolexec::internal::RapidJsonAssertFailed(__FILE__, __LINE__))

#endif  // TOOLEXEC_TOOLS_RUNTIME_RAPIDJSON_CONFIG_H_
