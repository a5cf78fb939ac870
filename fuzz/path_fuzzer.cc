// Fuzzes path resolution under a workspace (tools/workspace/confined.h): a
// model-written path mapped onto the call's roots, then opened beneath its
// root by both resolvers (openat2 where the kernel has it, and the user-space
// walk). The tree has symlinks that stay inside, that lead out (relative and
// absolute), that loop, and a file outside the workspace.
// Input: one byte of options (open flags, following a final symlink), then
// the path; a leading '@' stands for the first root's absolute path and '%'
// for the second's, so absolute paths inside the roots are reachable.
// Checks beyond "no crash":
//   - whatever either resolver opens is beneath its root (the kernel's own
//     account of the descriptor, /proc/self/fd), never outside;
//   - both resolvers agree on the outcome (the status code);
//   - a resolved relative path is normalized (no leading '/', no "." or
//     empty components).
#include <fcntl.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/workspace/confined.h"

namespace {

namespace fs = toolexec::fs;
using toolexec::testing::TempTree;

struct Fixture {
  TempTree tree;  // <tree>/ws is the workspace; <tree>/outside is not
  toolexec::WorkspaceRoots roots;

  Fixture() {
    tree.Write("outside/secret.txt", "secret\n");
    tree.Write("ws/a/b/c.txt", "c\n");
    tree.Write("ws/a/file.txt", "file\n");
    tree.Write("ws/sub/inner.txt", "inner\n");
    tree.Mkdir("ws/empty");
    tree.Symlink("ws/in_link", "a");
    tree.Symlink("ws/a/up", "..");
    tree.Symlink("ws/a/b/deep_in", "../../sub/inner.txt");
    tree.Symlink("ws/out_link", "../outside");
    tree.Symlink("ws/a/up_out", "../../outside/secret.txt");
    tree.Symlink("ws/abs_link", "/etc");
    tree.Symlink("ws/abs_in", tree.Abs("ws/a"));
    tree.Symlink("ws/loop1", "loop2");
    tree.Symlink("ws/loop2", "loop1");
    tree.Symlink("ws/sub/to_parent", "../a");
    tree.Symlink("ws/dangling", "nowhere/x");
    tree.Symlink("ws/proc_self", "/proc/self/cwd");
    roots = toolexec::testing::Roots({tree.Abs("ws"), tree.Abs("ws/sub")});
  }
};

Fixture& Get() {
  static Fixture* fixture = new Fixture();
  return *fixture;
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

bool Beneath(const std::string& path, const std::string& root) {
  return path == root || absl::StartsWith(path, root + "/");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Fixture& f = Get();
  const uint8_t options = data[0];
  std::string path(reinterpret_cast<const char*>(data + 1), size - 1);
  if (!path.empty() && path[0] == '@') path.replace(0, 1, f.roots[0]->path());
  if (!path.empty() && path[0] == '%') path.replace(0, 1, f.roots[1]->path());

  auto wp = fs::ResolveWorkspacePath(f.roots, path);
  if (!wp.ok()) return 0;
  if (absl::StartsWith(wp->relative, "/")) Fail("relative path starts with '/': " + path);
  if (wp->relative != ".") {
    for (absl::string_view c : absl::StrSplit(wp->relative, '/')) {
      if (c.empty() || c == ".") Fail("relative path not normalized: '" + wp->relative + "'");
    }
  }
  (void)wp->BaseName();
  (void)wp->Parent();
  (void)wp->WithRelative(wp->relative);

  static const int kFlags[] = {O_RDONLY, O_PATH, O_RDONLY | O_DIRECTORY, O_PATH | O_DIRECTORY};
  const int flags = kFlags[options & 3];
  const fs::FollowFinal follow = (options & 4) ? fs::FollowFinal::kNo : fs::FollowFinal::kYes;
  std::vector<absl::StatusCode> codes;
  for (auto resolver : {fs::internal::Resolver::kOpenat2, fs::internal::Resolver::kWalk}) {
    if (resolver == fs::internal::Resolver::kOpenat2 && !fs::internal::Openat2Available()) continue;
    fs::internal::SetResolverForTesting(resolver);
    auto fd = fs::OpenBeneath(*wp, flags, follow);
    codes.push_back(fd.status().code());
    if (!fd.ok()) continue;
    const std::string where = fs::FdPath(fd->get());
    if (!where.empty() && !Beneath(where, wp->root->path())) {
      Fail(absl::StrCat("'", path, "' opened '", where, "', outside the root '",
                        wp->root->path(), "'"));
    }
  }
  fs::internal::SetResolverForTesting(fs::internal::Resolver::kAuto);
  if (codes.size() == 2 && codes[0] != codes[1]) {
    Fail(absl::StrCat("resolvers disagree on '", path, "' (flags ", flags, "): openat2 ",
                      absl::StatusCodeToString(codes[0]), ", walk ",
                      absl::StatusCodeToString(codes[1])));
  }
  return 0;
}
