#include "tools/workspace/confined.h"

#include <fcntl.h>
#include <linux/limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <deque>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tools/runtime/tool.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

namespace toolexec::fs {
namespace {

// openat2 availability: unknown until the first call.
enum : int { kUnknown = 0, kYes = 1, kNo = 2 };
std::atomic<int> g_openat2{kUnknown};
std::atomic<internal::Resolver> g_resolver{internal::Resolver::kAuto};

// How often a resolution is retried when the tree changes under it.
constexpr int kMaxRetries = 16;

// Lexical components: "" and "." dropped, ".." kept.
std::vector<absl::string_view> Components(absl::string_view path) {
  std::vector<absl::string_view> out;
  for (absl::string_view c : absl::StrSplit(path, '/')) {
    if (c.empty() || c == ".") continue;
    out.push_back(c);
  }
  return out;
}

std::string Shorten(absl::string_view s, size_t max = 60) {
  if (s.size() <= max) return std::string(s);
  return absl::StrCat(s.substr(0, max), "...");
}

std::string DisplayOf(const ConfinedRoot& root, absl::string_view relative, bool is_default) {
  if (is_default) return std::string(relative);
  if (relative == ".") return root.path();
  return root.path() == "/" ? absl::StrCat("/", relative) : absl::StrCat(root.path(), "/", relative);
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Whether directory `dir` is `root` or beneath it, found by climbing "..".
// Used by the walk only: openat2 checks this in the kernel.
bool DirIsBeneath(int dir, const struct stat& root) {
  UniqueFd cur(openat(dir, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur.valid()) return false;
  struct stat st;
  if (fstat(cur.get(), &st) != 0) return false;
  for (int depth = 0; depth < PATH_MAX; ++depth) {
    if (SameFile(st, root)) return true;
    UniqueFd parent(openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!parent.valid()) return false;
    struct stat pst;
    if (fstat(parent.get(), &pst) != 0) return false;
    if (SameFile(pst, st)) return false;  // reached "/" without meeting the root
    cur = std::move(parent);
    st = pst;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------
// UniqueFd, ConfinedRoot

absl::StatusOr<std::shared_ptr<const ConfinedRoot>> ConfinedRoot::Make(std::string path,
                                                                        UniqueFd fd) {
  if (fd.get() <= STDERR_FILENO) {
    // A daemon started with a standard stream closed hands out 0-2: move the
    // handle up so a child process can inherit it under the same number.
    UniqueFd lifted(fcntl(fd.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1));
    if (!lifted.valid()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("workspace root '", path, "': ", ErrnoText(errno)));
    }
    fd = std::move(lifted);
  }
  return std::shared_ptr<const ConfinedRoot>(new ConfinedRoot(std::move(path), std::move(fd)));
}

absl::StatusOr<std::shared_ptr<const ConfinedRoot>> ConfinedRoot::Open(absl::string_view path) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("workspace root '", path, "' is not an absolute path"));
  }
  std::string normalized(path);
  while (normalized.size() > 1 && normalized.back() == '/') normalized.pop_back();
  UniqueFd fd(open(normalized.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    int err = errno;
    return absl::FailedPreconditionError(absl::StrCat(
        "workspace root '", normalized, "' cannot be opened as a directory: ", ErrnoText(err)));
  }
  return Make(std::move(normalized), std::move(fd));
}

// ---------------------------------------------------------------------------
// WorkspacePath

WorkspacePath WorkspacePath::WithRelative(absl::string_view rel) const {
  WorkspacePath p;
  p.root = root;
  p.is_default_root = is_default_root;
  std::vector<absl::string_view> comps = Components(rel);
  p.relative = comps.empty() ? "." : absl::StrJoin(comps, "/");
  p.display = DisplayOf(*root, p.relative, is_default_root);
  return p;
}

std::string WorkspacePath::BaseName() const {
  if (relative == ".") return "";
  size_t slash = relative.rfind('/');
  return slash == std::string::npos ? relative : relative.substr(slash + 1);
}

WorkspacePath WorkspacePath::Parent() const {
  size_t slash = relative.rfind('/');
  return WithRelative(slash == std::string::npos ? "." : absl::string_view(relative).substr(0, slash));
}

absl::StatusOr<WorkspacePath> ResolveWorkspacePath(
    const std::vector<std::shared_ptr<const ConfinedRoot>>& workspaces, absl::string_view path,
    absl::string_view param) {
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        param, " is empty; give a path relative to the workspace, e.g. \"src/main.cc\""));
  }
  if (path.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(param, " contains a NUL byte"));
  }
  if (path.size() >= PATH_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(param, " is ", path.size(),
                                                   " bytes long; the limit is ", PATH_MAX - 1));
  }
  std::vector<absl::string_view> comps = Components(path);
  for (absl::string_view c : comps) {
    if (c.size() > NAME_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(param, " has a component of ", c.size(),
                                                     " bytes ('", Shorten(c, 24),
                                                     "'); the limit is ", NAME_MAX));
    }
  }
  if (workspaces.empty() || workspaces[0] == nullptr) {
    return absl::FailedPreconditionError(
        "no workspace is configured for this call (start toolexecd with --workspace, or open a "
        "session with workspaces)");
  }

  size_t chosen = 0;
  std::vector<absl::string_view> rel = comps;
  if (path[0] == '/') {
    bool found = false;
    for (size_t i = 0; i < workspaces.size() && !found; ++i) {
      if (workspaces[i] == nullptr) continue;
      std::vector<absl::string_view> root_comps = Components(workspaces[i]->path());
      if (root_comps.size() > comps.size()) continue;
      bool prefix = true;
      for (size_t k = 0; k < root_comps.size() && prefix; ++k) prefix = root_comps[k] == comps[k];
      if (!prefix) continue;
      found = true;
      chosen = i;
      rel.assign(comps.begin() + root_comps.size(), comps.end());
    }
    if (!found) {
      std::vector<absl::string_view> names;
      for (const auto& root : workspaces) {
        if (root != nullptr) names.push_back(root->path());
      }
      return OutsideWorkspaceError(
          path,
          absl::StrCat("it is not beneath the workspace ", names.size() == 1 ? "" : "roots ",
                       absl::StrJoin(names, ", "), "; give a path relative to the workspace"));
    }
  }
  WorkspacePath wp;
  wp.root = workspaces[chosen];
  wp.is_default_root = chosen == 0;
  wp.relative = rel.empty() ? "." : absl::StrJoin(rel, "/");
  wp.display = DisplayOf(*wp.root, wp.relative, wp.is_default_root);
  wp.trailing_slash = path.back() == '/' || path == "." || absl::EndsWith(path, "/.");
  return wp;
}

// ---------------------------------------------------------------------------
// The user-space walk (fallback resolver)

namespace internal {

void SetResolverForTesting(Resolver resolver) { g_resolver.store(resolver); }

bool Openat2Available() {
  int state = g_openat2.load(std::memory_order_acquire);
  if (state == kUnknown) {
    long fd = Openat2(AT_FDCWD, "/", O_PATH, 0);
    // ENOSYS: an old kernel; EPERM: a seccomp filter that does not know it.
    state = (fd < 0 && (errno == ENOSYS || errno == EPERM)) ? kNo : kYes;
    if (fd >= 0) close(static_cast<int>(fd));
    g_openat2.store(state, std::memory_order_release);
  }
  return state == kYes;
}

UniqueFd WalkBeneath(int root_fd, absl::string_view relative, int flags, FollowFinal follow,
                     ResolveFailure* failure) {
  auto fail = [&](int err, std::string detail) {
    failure->err = err;
    failure->detail = std::move(detail);
    return UniqueFd();
  };
  struct stat root_st;
  if (fstat(root_fd, &root_st) != 0) return fail(errno, "the workspace root cannot be read");

  for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
    // The directories entered so far, below the root, with their names (for
    // messages). ".." pops this stack: the kernel is never asked for a parent.
    std::vector<UniqueFd> dirs;
    std::vector<std::string> names;
    auto cur_dir = [&] { return dirs.empty() ? root_fd : dirs.back().get(); };
    auto where = [&](absl::string_view last) {
      std::string joined = absl::StrJoin(names, "/");
      if (joined.empty()) return std::string(last);
      return absl::StrCat(joined, "/", last);
    };
    std::deque<std::string> pending;
    for (absl::string_view c : absl::StrSplit(relative, '/')) pending.emplace_back(c);
    int links = 0;
    bool retry = false;
    // The symlinks whose targets are being expanded, innermost last: how many
    // pending components follow the expansion, and how to name the link.
    std::vector<std::pair<size_t, std::string>> expanding;
    std::string via_link;

    while (!pending.empty()) {
      while (!expanding.empty() && pending.size() <= expanding.back().first) expanding.pop_back();
      via_link = expanding.empty() ? "" : expanding.back().second;
      std::string comp = std::move(pending.front());
      pending.pop_front();
      if (comp.empty() || comp == ".") continue;
      if (comp == "..") {
        if (dirs.empty()) {
          return fail(EXDEV, via_link.empty()
                                 ? "'..' climbs above the workspace root"
                                 : absl::StrCat("symbolic link ", via_link,
                                                " climbs above the workspace root"));
        }
        dirs.pop_back();
        names.pop_back();
        continue;
      }
      bool last = true;
      for (const std::string& p : pending) {
        if (!p.empty() && p != ".") {
          last = false;
          break;
        }
      }
      UniqueFd fd(openat(cur_dir(), comp.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
      if (!fd.valid()) return fail(errno, where(comp));
      struct stat st;
      if (fstat(fd.get(), &st) != 0) return fail(errno, where(comp));
      if (S_ISLNK(st.st_mode)) {
        if (last && follow == FollowFinal::kNo) {
          // As open(2) with O_NOFOLLOW: the link is not a directory, and only
          // O_PATH opens the link itself.
          if (flags & O_DIRECTORY) return fail(ENOTDIR, where(comp));
          if (flags & O_PATH) return fd;
          return fail(ELOOP, absl::StrCat("'", where(comp), "' is a symbolic link"));
        }
        if (++links > kMaxSymlinks) {
          return fail(ELOOP, absl::StrCat("more than ", kMaxSymlinks,
                                          " symbolic links (a loop?) at '", where(comp), "'"));
        }
        char buf[PATH_MAX];
        ssize_t n = readlinkat(fd.get(), "", buf, sizeof(buf));
        if (n < 0) return fail(errno, where(comp));
        std::string target(buf, static_cast<size_t>(n));
        via_link = absl::StrCat("'", where(comp), "' -> '", Shorten(target), "'");
        if (target.empty()) return fail(ENOENT, where(comp));
        expanding.emplace_back(pending.size(), via_link);
        if (target[0] == '/') {
          return fail(EXDEV, absl::StrCat("symbolic link ", via_link,
                                          " is absolute (only relative links that stay inside "
                                          "the workspace are followed)"));
        }
        std::vector<std::string> parts = absl::StrSplit(target, '/');
        pending.insert(pending.begin(), parts.begin(), parts.end());
        continue;
      }
      if (!last) {
        if (!S_ISDIR(st.st_mode)) return fail(ENOTDIR, where(comp));
        dirs.push_back(std::move(fd));
        names.push_back(comp);
        continue;
      }
      // The final component, not a symlink.
      if ((flags & O_DIRECTORY) && !S_ISDIR(st.st_mode)) return fail(ENOTDIR, where(comp));
      UniqueFd out;
      if (flags & O_PATH) {
        out = std::move(fd);
      } else {
        out.reset(openat(cur_dir(), comp.c_str(), flags | O_NOFOLLOW | O_CLOEXEC));
        if (!out.valid()) {
          if (errno == ELOOP) {  // became a symlink since: start again
            retry = true;
            break;
          }
          return fail(errno, where(comp));
        }
        struct stat ost;
        if (fstat(out.get(), &ost) != 0) return fail(errno, where(comp));
        if (!SameFile(ost, st)) {
          retry = true;
          break;
        }
      }
      if (!dirs.empty() && !DirIsBeneath(cur_dir(), root_st)) {
        return fail(EXDEV, absl::StrCat("the directory holding '", where(comp),
                                        "' was moved out of the workspace during the lookup"));
      }
      return out;
    }
    if (retry) continue;
    // The path ended on a directory already entered (".", "a/..", "a/b/").
    UniqueFd out(openat(cur_dir(), ".", (flags & ~O_NOFOLLOW) | O_CLOEXEC));
    if (!out.valid()) return fail(errno, relative.empty() ? "." : std::string(relative));
    if (!dirs.empty() && !DirIsBeneath(out.get(), root_st)) {
      return fail(EXDEV, "a directory on the path was moved out of the workspace during the lookup");
    }
    return out;
  }
  return fail(EAGAIN, "the path kept changing during the lookup");
}

}  // namespace internal

// ---------------------------------------------------------------------------
// Opening

namespace {

// Turns a resolution failure into the status of the convention.
absl::Status FailureStatus(const internal::ResolveFailure& f, const WorkspacePath& path) {
  if (f.err == EXDEV) return OutsideWorkspaceError(path.display, f.detail);
  if (f.err == ELOOP && !f.detail.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("cannot open '", path.display, "': ", f.detail));
  }
  return ErrnoStatus(f.err, path.display);
}

bool UseOpenat2() {
  switch (g_resolver.load(std::memory_order_relaxed)) {
    case internal::Resolver::kWalk:
      return false;
    case internal::Resolver::kOpenat2:
      return true;
    case internal::Resolver::kAuto:
      break;
  }
  return internal::Openat2Available();
}

}  // namespace

absl::StatusOr<UniqueFd> OpenBeneath(const WorkspacePath& path, int flags, FollowFinal follow) {
  if ((flags & (O_CREAT | O_TRUNC)) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
    return absl::InvalidArgumentError("OpenBeneath does not create files; use WriteFileAtomic");
  }
  if (follow == FollowFinal::kNo) flags |= O_NOFOLLOW;
  const int root = path.root->fd();
  if (UseOpenat2()) {
    for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
      long fd = Openat2(root, path.relative.c_str(), flags,
                        RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
      if (fd >= 0) return UniqueFd(static_cast<int>(fd));
      int err = errno;
      if (err == EAGAIN || err == EINTR) continue;  // a rename raced the lookup
      if (err == ENOSYS && g_resolver.load() == internal::Resolver::kAuto) {
        g_openat2.store(kNo);
        break;  // fall back to the walk below
      }
      if (err == EXDEV || err == ELOOP) {
        // The kernel says only "escape" or "loop"; the walk says which link and why.
        internal::ResolveFailure why;
        UniqueFd probe = internal::WalkBeneath(root, path.relative, O_PATH, follow, &why);
        if (!probe.valid()) {
          if (why.err == EXDEV || why.err == ELOOP) return FailureStatus(why, path);
        } else if (err == ELOOP && follow == FollowFinal::kNo) {
          struct stat st;
          if (fstat(probe.get(), &st) == 0 && S_ISLNK(st.st_mode)) {
            return absl::FailedPreconditionError(
                absl::StrCat("'", path.display, "' is a symbolic link"));
          }
        }
        // ELOOP the walk did not reproduce: a /proc magic link (RESOLVE_NO_MAGICLINKS).
        if (err == ELOOP) {
          return OutsideWorkspaceError(path.display, "it passes through a /proc magic link");
        }
        return OutsideWorkspaceError(path.display, "it leads out of the workspace");
      }
      return ErrnoStatus(err, path.display);
    }
    if (g_openat2.load() != kNo) {
      return ErrnoStatus(EAGAIN, path.display);
    }
  }
  internal::ResolveFailure failure;
  UniqueFd fd = internal::WalkBeneath(root, path.relative, flags, follow, &failure);
  if (!fd.valid()) return FailureStatus(failure, path);
  return fd;
}

absl::StatusOr<OpenedFile> OpenRegularFile(const WorkspacePath& path, FollowFinal follow) {
  // O_NONBLOCK: opening a fifo for reading must not wait for a writer.
  auto fd = OpenBeneath(path, O_RDONLY | O_NONBLOCK, follow);
  OpenedFile file;
  if (!fd.ok()) {
    // A socket cannot be opened at all (ENXIO): look at what is there instead.
    absl::StatusOr<UniqueFd> any = fd.status();
    if (absl::IsUnknown(fd.status())) any = OpenBeneath(path, O_PATH, follow);
    if (!any.ok() || fstat(any->get(), &file.st) != 0 || S_ISREG(file.st.st_mode)) {
      return fd.status();
    }
  } else if (fstat(fd->get(), &file.st) != 0) {
    return ErrnoStatus(errno, path.display);
  }
  if (S_ISDIR(file.st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", path.display, "' is a directory, not a file"));
  }
  if (path.trailing_slash) {  // as open(2): "a.txt/" is ENOTDIR
    return absl::FailedPreconditionError(absl::StrCat(
        "'", path.display, "' is not a directory, but the path ends in '/'; drop the '/'"));
  }
  if (!S_ISREG(file.st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "'", path.display, "' is ", FileKindName(file.st.st_mode), ", not a regular file"));
  }
  if (!fd.ok()) return fd.status();
  int fl = fcntl(fd->get(), F_GETFL);
  if (fl >= 0) fcntl(fd->get(), F_SETFL, fl & ~O_NONBLOCK);
  file.fd = *std::move(fd);
  return file;
}

namespace {

// OpenBeneath(path, flags | O_DIRECTORY), saying plainly when the last
// component is not a directory.
absl::StatusOr<UniqueFd> OpenDirectoryWith(const WorkspacePath& path, int flags) {
  auto fd = OpenBeneath(path, flags | O_DIRECTORY);
  if (!fd.ok() && absl::IsFailedPrecondition(fd.status())) {
    // ENOTDIR on the last component: say plainly that it is a file.
    auto any = OpenBeneath(path, O_PATH);
    struct stat st;
    if (any.ok() && fstat(any->get(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("'", path.display, "' is not a directory"));
    }
  }
  return fd;
}

}  // namespace

std::string FdPath(int fd) {
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  char buf[PATH_MAX];
  ssize_t n = readlink(link, buf, sizeof(buf));
  if (n <= 0 || n >= static_cast<ssize_t>(sizeof(buf)) || buf[0] != '/') return "";
  return std::string(buf, static_cast<size_t>(n));
}

absl::StatusOr<UniqueFd> OpenDirectory(const WorkspacePath& path) {
  return OpenDirectoryWith(path, O_RDONLY);
}

absl::StatusOr<std::shared_ptr<const ConfinedRoot>> ConfinedRoot::OpenWithin(
    const WorkspacePath& dir) {
  auto fd = OpenDirectoryWith(dir, O_PATH);
  if (!fd.ok()) return fd.status();
  // Named by where the kernel found it (as realpath(3) would name it), or by
  // the lexical path when /proc cannot tell.
  std::string path = FdPath(fd->get());
  if (path.empty() || absl::EndsWith(path, " (deleted)")) {
    path = DisplayOf(*dir.root, dir.relative, /*is_default=*/false);
  }
  return Make(std::move(path), *std::move(fd));
}

namespace {

// What MakeDirectories(path) would fail with, found before it creates
// anything. Existing directories are resolved by the kernel as usual. The
// first missing name, and each name after it until a ".." leaves it again,
// will be a new plain directory, so ".." over those is lexical; a ".." that
// climbs out of them goes back to the resolver on the existing directory it
// returns to. A path that leaves the workspace is thus refused before the
// first mkdirat (unless the tree changes between this check and the creation;
// the creation itself still resolves every step beneath the root).
absl::Status CheckBeforeCreating(const WorkspacePath& path) {
  std::vector<absl::string_view> comps = Components(path.relative);
  std::vector<absl::string_view> base;  // an existing directory
  size_t i = 0;
  while (i < comps.size()) {
    base.push_back(comps[i]);
    auto dir = OpenDirectory(path.WithRelative(absl::StrJoin(base, "/")));
    if (dir.ok()) {
      ++i;
      continue;
    }
    if (ErrorCodeOf(dir.status()) == ErrorCode::kDenied && comps[i] == "..") {
      return OutsideWorkspaceError(path.display, "its '..' climbs above the workspace root");
    }
    if (!absl::IsNotFound(dir.status())) return dir.status();
    base.pop_back();
    // comps[i] is missing (never a "..": the parent of a directory exists).
    size_t fresh = 0;
    for (; i < comps.size(); ++i) {
      if (comps[i] != "..") {
        ++fresh;
      } else if (--fresh == 0) {
        break;  // back in `base`
      }
    }
    ++i;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<UniqueFd> MakeDirectories(const WorkspacePath& path) {
  auto existing = OpenDirectory(path);
  if (existing.ok() || !absl::IsNotFound(existing.status())) return existing;
  if (absl::Status s = CheckBeforeCreating(path); !s.ok()) return s;
  auto cur = OpenDirectory(path.WithRelative("."));
  if (!cur.ok()) return cur.status();
  std::string prefix;
  for (absl::string_view c : Components(path.relative)) {
    prefix = prefix.empty() ? std::string(c) : absl::StrCat(prefix, "/", c);
    WorkspacePath sub = path.WithRelative(prefix);
    auto next = OpenDirectory(sub);
    if (!next.ok()) {
      if (!absl::IsNotFound(next.status())) return next.status();
      // `cur` was resolved beneath the root and `c` is one name: mkdirat
      // cannot create anything elsewhere (it does not follow a final symlink).
      if (mkdirat(cur->get(), std::string(c).c_str(), 0777) != 0 && errno != EEXIST) {
        return ErrnoStatus(errno, sub.display, "creating directory");
      }
      next = OpenDirectory(sub);
      if (!next.ok()) return next.status();
    }
    cur = std::move(next);
  }
  return cur;
}

long Openat2(int dirfd, const char* path, int flags, uint64_t resolve) {
  struct open_how how = {};
  how.flags = static_cast<uint64_t>(flags) | O_CLOEXEC;
  how.mode = 0;
  how.resolve = resolve;
  return syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

absl::Status RefuseFinalSymlink(const WorkspacePath& path, absl::string_view tool) {
  // Resolving the link (following it) says whether it leads out; an escape is
  // reported exactly as view_file reports it.
  auto followed = OpenBeneath(path, O_PATH | O_CLOEXEC, FollowFinal::kYes);
  if (!followed.ok() && ErrorCodeOf(followed.status()) == ErrorCode::kDenied) {
    return followed.status();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "'", path.display, "' is a symbolic link; ", tool,
      " does not write through links: write to the file it points to, or remove the link "
      "first"));
}

}  // namespace toolexec::fs
