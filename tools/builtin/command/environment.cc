#include "tools/builtin/command/environment.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace toolexec::command {
namespace {

absl::string_view NameOf(absl::string_view entry) {
  size_t eq = entry.find('=');
  return eq == absl::string_view::npos ? entry : entry.substr(0, eq);
}

}  // namespace

bool LooksSecret(absl::string_view name) {
  // Debian's abseil has no StrContainsIgnoreCase.
  std::string upper = absl::AsciiStrToUpper(name);
  for (absl::string_view word : {"KEY", "SECRET", "TOKEN", "PASSWORD"}) {
    if (absl::StrContains(upper, word)) return true;
  }
  return false;
}

std::vector<std::string> ScrubEnvironment(const char* const* env,
                                          const std::vector<std::string>& allow) {
  std::vector<std::string> out;
  if (env == nullptr) return out;
  for (; *env != nullptr; ++env) {
    absl::string_view entry(*env);
    if (entry.find('=') == absl::string_view::npos) continue;
    absl::string_view name = NameOf(entry);
    if (name.empty()) continue;
    if (LooksSecret(name) && std::find(allow.begin(), allow.end(), name) == allow.end()) continue;
    out.emplace_back(entry);
  }
  return out;
}

std::vector<std::string> MergeEnvironment(
    const std::vector<std::string>& base,
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> out = base;
  absl::flat_hash_map<std::string, size_t> index;
  for (size_t i = 0; i < out.size(); ++i) index[std::string(NameOf(out[i]))] = i;
  for (const auto& [name, value] : overrides) {
    std::string entry = name + "=" + value;
    auto it = index.find(name);
    if (it != index.end()) {
      out[it->second] = std::move(entry);
    } else {
      index[name] = out.size();
      out.push_back(std::move(entry));
    }
  }
  return out;
}

std::string LookupEnvironment(const std::vector<std::string>& env, absl::string_view name) {
  for (const std::string& e : env) {
    if (NameOf(e) == name) return e.substr(name.size() + 1);
  }
  return "";
}

}  // namespace toolexec::command
