// Helpers for the file-tool tests: a temporary directory tree that cleans up
// after itself, and calls of a tool with the [Arguments] pipeline (coerce, validate,
// defaults) and a ToolContext whose workspaces the test chooses.
#ifndef TOOLEXEC_TESTS_UNIT_BUILTIN_FILE_TEST_UTIL_H_
#define TOOLEXEC_TESTS_UNIT_BUILTIN_FILE_TEST_UTIL_H_

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/workspace/confined.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/json.h"
#include "tools/runtime/schema.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::testing {

// A fresh directory under $TMPDIR (or /tmp), by its real path; removed (with
// everything in it) on destruction.
class TempTree {
 public:
  TempTree() {
    const char* base = getenv("TMPDIR");
    std::string templ = std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
                        "/toolexec-fs-XXXXXX";
    char* made = mkdtemp(templ.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    char real[PATH_MAX];
    if (realpath(made, real) == nullptr) throw std::runtime_error("realpath failed");
    root_ = real;
  }
  ~TempTree() {
    std::error_code ec;
    // Make everything writable first so removal cannot fail on modes tests set.
    for (auto it = std::filesystem::recursive_directory_iterator(
             root_, std::filesystem::directory_options::none, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0755);
    }
    std::filesystem::remove_all(root_, ec);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  const std::string& path() const { return root_; }
  std::string Abs(absl::string_view rel) const { return root_ + "/" + std::string(rel); }

  void Mkdir(absl::string_view rel) const {
    std::filesystem::create_directories(Abs(rel));
  }
  void Write(absl::string_view rel, absl::string_view content, mode_t mode = 0644) const {
    std::filesystem::path p(Abs(rel));
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    chmod(p.c_str(), mode);
  }
  std::string Read(absl::string_view rel) const {
    std::ifstream in(Abs(rel), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void Symlink(absl::string_view rel, absl::string_view target) const {
    std::filesystem::path p(Abs(rel));
    std::filesystem::create_directories(p.parent_path());
    if (symlink(std::string(target).c_str(), p.c_str()) != 0) {
      throw std::runtime_error("symlink failed: " + p.string());
    }
  }
  bool Exists(absl::string_view rel) const {
    struct stat st;
    return lstat(Abs(rel).c_str(), &st) == 0;
  }
  bool IsSymlink(absl::string_view rel) const {
    struct stat st;
    return lstat(Abs(rel).c_str(), &st) == 0 && S_ISLNK(st.st_mode);
  }
  mode_t Mode(absl::string_view rel) const {
    struct stat st;
    if (lstat(Abs(rel).c_str(), &st) != 0) return 0;
    return st.st_mode & 07777;
  }
  // Names in a directory (not recursive), sorted.
  std::vector<std::string> List(absl::string_view rel = "") const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(rel.empty() ? root_ : Abs(rel), ec)) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Every path under the tree (recursive, relative), sorted.
  std::vector<std::string> ListAll(absl::string_view rel = "") const {
    std::vector<std::string> out;
    std::error_code ec;
    std::string base = rel.empty() ? root_ : Abs(rel);
    for (auto it = std::filesystem::recursive_directory_iterator(base, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      out.push_back(it->path().lexically_relative(base).string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::string root_;
};

// The workspace roots at `paths`, each opened once as the daemon opens its
// own. A path that cannot be opened is a broken test set-up: throws.
inline std::shared_ptr<const fs::ConfinedRoot> RootAt(const std::string& path) {
  auto root = fs::ConfinedRoot::Open(path);
  if (!root.ok()) throw std::runtime_error(root.status().ToString());
  return *std::move(root);
}
inline WorkspaceRoots Roots(const std::vector<std::string>& paths) {
  WorkspaceRoots roots;
  for (const std::string& p : paths) roots.push_back(RootAt(p));
  return roots;
}

// Runs `tool` on `args_json` as the runner would ([Arguments] coerce/validate/defaults,
// then Call) with `workspaces` as the call's roots.
inline absl::StatusOr<Json> CallTool(const Tool& tool, absl::string_view args_json,
                                     WorkspaceRoots workspaces,
                                     const CancellationToken* cancel = nullptr) {
  auto schema = CompiledSchema::Compile(tool.spec().parameters_schema);
  if (!schema.ok()) return schema.status();
  auto args = ParseJson(args_json);
  if (!args.ok()) return args.status();
  if (absl::Status s = (*schema)->Prepare(*args); !s.ok()) return s;
  CallInfo info;
  info.tool_name = tool.name();
  info.workspaces = std::move(workspaces);
  static CancellationToken never;
  ToolContext ctx(std::move(info), {}, cancel != nullptr ? cancel : &never, nullptr);
  return tool.Call(*args, ctx);
}
// The same, with the directories at `workspaces` opened for this call.
inline absl::StatusOr<Json> CallTool(const Tool& tool, absl::string_view args_json,
                                     const std::vector<std::string>& workspaces,
                                     const CancellationToken* cancel = nullptr) {
  return CallTool(tool, args_json, Roots(workspaces), cancel);
}

// A JSON string literal of `s` (for building args_json with arbitrary bytes).
inline std::string Quoted(absl::string_view s) {
  rapidjson::Value v(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return ToJsonString(v);
}

// Members of a result, with a value no test expects when absent or mistyped.
inline std::string Str(const JsonValue& v, const char* key) {
  if (!v.IsObject() || !v.HasMember(key) || !v[key].IsString()) return "<missing>";
  return std::string(v[key].GetString(), v[key].GetStringLength());
}
inline int64_t Int(const JsonValue& v, const char* key) {
  return v.IsObject() && v.HasMember(key) && v[key].IsInt64() ? v[key].GetInt64() : -999999;
}
inline bool Flag(const JsonValue& v, const char* key) {
  return v.IsObject() && v.HasMember(key) && v[key].IsBool() && v[key].GetBool();
}

// Sets the resolver for one scope.
class ScopedResolver {
 public:
  explicit ScopedResolver(fs::internal::Resolver r) { fs::internal::SetResolverForTesting(r); }
  ~ScopedResolver() { fs::internal::SetResolverForTesting(fs::internal::Resolver::kAuto); }
};

}  // namespace toolexec::testing

#endif  // TOOLEXEC_TESTS_UNIT_BUILTIN_FILE_TEST_UTIL_H_
