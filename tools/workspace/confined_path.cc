#include "tools/workspace/confined_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace toolexec::fs {
namespace {

// Lexical normalisation of a path the kernel already resolved beneath the
// root (the fallback when /proc is not mounted).
std::string NormalizeRelative(absl::string_view rel) {
  std::vector<absl::string_view> parts;
  for (absl::string_view part : absl::StrSplit(rel, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  return absl::StrJoin(parts, "/");
}

}  // namespace

std::string ConfinedPath::Display(absl::string_view rel) const {
  if (display_prefix.empty()) return rel.empty() ? "." : std::string(rel);
  if (rel.empty()) return std::string(absl::StripSuffix(display_prefix, "/"));
  return absl::StrCat(display_prefix, rel);
}

std::string JoinRelative(absl::string_view dir, absl::string_view name) {
  if (dir.empty()) return std::string(name);
  return absl::StrCat(dir, "/", name);
}

int PathCompare(absl::string_view a, absl::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  // Paths of one listing share long prefixes: skip them a word at a time.
  while (i + 8 <= n && std::memcmp(a.data() + i, b.data() + i, 8) == 0) i += 8;
  while (i < n && a[i] == b[i]) ++i;
  if (i == n) return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
  const int x = a[i] == '/' ? -1 : static_cast<unsigned char>(a[i]);
  const int y = b[i] == '/' ? -1 : static_cast<unsigned char>(b[i]);
  return x < y ? -1 : 1;
}

bool PathLess(absl::string_view a, absl::string_view b) { return PathCompare(a, b) < 0; }

absl::StatusOr<ConfinedPath> OpenConfined(
    const std::vector<std::shared_ptr<const ConfinedRoot>>& workspaces, absl::string_view path,
    absl::string_view param) {
  if (path.empty()) path = ".";
  absl::StatusOr<WorkspacePath> wp = ResolveWorkspacePath(workspaces, path, param);
  if (!wp.ok()) return wp.status();
  // O_NONBLOCK: naming a FIFO must not hang the call.
  absl::StatusOr<UniqueFd> fd = OpenBeneath(*wp, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (!fd.ok()) return fd.status();
  struct stat st;
  if (fstat(fd->get(), &st) != 0) return ErrnoStatus(errno, wp->display);
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", wp->display, "' is neither a directory nor a regular file"));
  }
  ConfinedPath out;
  out.is_dir = S_ISDIR(st.st_mode);
  if (!out.is_dir) fcntl(fd->get(), F_SETFL, fcntl(fd->get(), F_GETFL) & ~O_NONBLOCK);
  out.root = wp->root;
  out.fd = *std::move(fd);
  if (!wp->is_default_root) out.display_prefix = absl::StrCat(wp->root->path(), "/");
  // The kernel's view of both descriptors, so "a/link/.." reports where it is.
  const std::string real_root = FdPath(out.root->fd());
  const std::string real = FdPath(out.fd.get());
  absl::string_view r = real;
  if (!real_root.empty() && !real.empty() && absl::ConsumePrefix(&r, real_root) &&
      (r.empty() || r.front() == '/' || real_root == "/")) {
    out.relative = std::string(absl::StripPrefix(r, "/"));
  } else {
    out.relative = NormalizeRelative(wp->relative);
  }
  return out;
}

}  // namespace toolexec::fs
