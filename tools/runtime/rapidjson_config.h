// Included before any RapidJSON header (json.h does it): a misused RapidJSON
// call (GetString() on a number, ...) throws std::runtime_error instead of
// being undefined behaviour in release builds. The runner turns an exception
// thrown by a tool into an error result, so such a bug fails one call, not the
// daemon. The definition is token for token the one valijson's RapidJSON
// adapter makes (schema.cc includes that adapter first), so every translation
// unit sees the same RapidJSON.
#ifndef TOOLEXEC_TOOLS_RUNTIME_RAPIDJSON_CONFIG_H_
#define TOOLEXEC_TOOLS_RUNTIME_RAPIDJSON_CONFIG_H_

#include <stdexcept>
#include <string>

#ifndef RAPIDJSON_ASSERT
        template<typename T>
        T rapidjson_assert(T t, const std::string& file, const int line) {
          if (t) {
            return t;
          }

          throw std::runtime_error("assertion failed; file: " + file + "; line: " + std::to_string(line));
        }

        #define RAPIDJSON_ASSERT(x) rapidjson_assert(x, __FILE__, __LINE__)
#endif

#endif  // TOOLEXEC_TOOLS_RUNTIME_RAPIDJSON_CONFIG_H_
