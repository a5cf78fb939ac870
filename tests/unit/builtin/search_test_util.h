// Helpers for the search-tool tests: a temporary workspace tree, and the
// search tools run through the real ToolRunner ([Arguments] coercion, validation and
// defaults; [Failures are results] error shaping; [Display] display) with that workspace.
#ifndef TOOLEXEC_TESTS_UNIT_BUILTIN_SEARCH_TEST_UTIL_H_
#define TOOLEXEC_TESTS_UNIT_BUILTIN_SEARCH_TEST_UTIL_H_

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec::search_testing {

// A fresh directory (by its real path), removed with its contents on destruction.
class TempWorkspace {
 public:
  TempWorkspace() {
    const char* base = getenv("TMPDIR");
    std::string templ =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/toolexec-search-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    char real[PATH_MAX];
    if (realpath(templ.c_str(), real) == nullptr) throw std::runtime_error("realpath failed");
    root_ = real;
  }
  ~TempWorkspace() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  TempWorkspace(const TempWorkspace&) = delete;
  TempWorkspace& operator=(const TempWorkspace&) = delete;

  const std::string& path() const { return root_; }
  std::string Abs(absl::string_view rel) const { return root_ + "/" + std::string(rel); }

  // Writes `content` to `rel`, creating parent directories.
  void Write(absl::string_view rel, absl::string_view content) const {
    const std::filesystem::path p = Abs(rel);
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out) throw std::runtime_error("cannot write " + p.string());
  }
  void Mkdir(absl::string_view rel) const { std::filesystem::create_directories(Abs(rel)); }
  // Creates the symlink `rel` -> `target` (target used verbatim).
  void Symlink(absl::string_view target, absl::string_view rel) const {
    const std::filesystem::path p = Abs(rel);
    std::filesystem::create_directories(p.parent_path());
    if (symlink(std::string(target).c_str(), p.c_str()) != 0) {
      throw std::runtime_error("symlink failed: " + p.string());
    }
  }

 private:
  std::string root_;
};

// Sets (or, with nullptr, unsets) an environment variable for one test,
// restoring it afterwards. Only while no other thread reads the environment.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The search tools registered in a runner whose default workspace is `root`.
class SearchToolsHarness {
 public:
  explicit SearchToolsHarness(std::string root, BuiltinOptions options = {}) {
    absl::Status s = RegisterSearchTools(registry_, options);
    if (!s.ok()) throw std::runtime_error(s.ToString());
    ToolRunner::Options runner_options;
    runner_options.default_workspace = testing::RootAt(root);
    runner_ = std::make_unique<ToolRunner>(&registry_, runner_options);
  }

  ToolCallResult Run(const std::string& name, const std::string& args_json) {
    return testing::RunOneCall(*runner_, name, args_json);
  }

  const ToolRegistry& registry() const { return registry_; }

 private:
  ToolRegistry registry_;
  std::unique_ptr<ToolRunner> runner_;
};

// The strings of a JSON array member.
inline std::vector<std::string> Strings(const JsonValue& object, const char* key) {
  std::vector<std::string> out;
  if (!object.IsObject() || !object.HasMember(key) || !object[key].IsArray()) return out;
  for (const JsonValue& v : object[key].GetArray()) {
    if (v.IsString()) out.emplace_back(v.GetString(), v.GetStringLength());
  }
  return out;
}

// "file:line:text" (or "file-line-text" for context) of each content match.
inline std::vector<std::string> MatchLines(const JsonValue& result) {
  std::vector<std::string> out;
  if (!result.IsObject() || !result.HasMember("matches")) return out;
  for (const JsonValue& m : result["matches"].GetArray()) {
    const bool context = m.HasMember("context") && m["context"].GetBool();
    out.push_back(std::string(m["file"].GetString()) + (context ? "-" : ":") +
                  std::to_string(m["line"].GetUint64()) + (context ? "-" : ":") +
                  m["text"].GetString());
  }
  return out;
}

}  // namespace toolexec::search_testing

#endif  // TOOLEXEC_TESTS_UNIT_BUILTIN_SEARCH_TEST_UTIL_H_
