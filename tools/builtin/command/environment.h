// The environment a command sees: the daemon's, minus anything that looks
// like a secret, plus what the call asks for.
#ifndef TOOLEXEC_TOOLS_BUILTIN_COMMAND_ENVIRONMENT_H_
#define TOOLEXEC_TOOLS_BUILTIN_COMMAND_ENVIRONMENT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace toolexec::command {

// Whether a variable name contains KEY, SECRET, TOKEN or PASSWORD (any case).
bool LooksSecret(absl::string_view name);

// `environ`-style entries ("NAME=value") minus the secret-looking ones whose
// names are not in `allow` (exact, case-sensitive names). Entries without '='
// are dropped.
std::vector<std::string> ScrubEnvironment(const char* const* env,
                                          const std::vector<std::string>& allow);

// `base` with each (name, value) of `overrides` set (replacing an entry of
// the same name, else appended), in order.
std::vector<std::string> MergeEnvironment(
    const std::vector<std::string>& base,
    const std::vector<std::pair<std::string, std::string>>& overrides);

// The value of `name` in `env`, or "" if absent.
std::string LookupEnvironment(const std::vector<std::string>& env, absl::string_view name);

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_BUILTIN_COMMAND_ENVIRONMENT_H_
