// Confined paths: every path-scoped tool ([Tool sets] path_scoped, [Deciding what runs] workspace_only)
// opens files only beneath a workspace root, with the check done by the kernel
// at open time, so there is no check-then-open race.
//
// How a call uses it:
//
//   auto wp = fs::ResolveWorkspacePath(ctx.info().workspaces, file_path);   // pick the root
//   if (!wp.ok()) return wp.status();
//   auto file = fs::OpenRegularFile(*wp);           // or OpenDirectory / OpenBeneath
//   ... read file->fd ...; name it to the model as wp->display
//
// Resolution. `relative` paths are resolved beneath the root's directory handle
// with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): ".." above the root,
// absolute symlinks, symlinks that lead out (at any depth, file or directory)
// and /proc magic links all fail in the kernel. Where openat2 is missing
// (ENOSYS, or refused by a seccomp filter) a user-space walk does the same
// component by component with O_NOFOLLOW: it keeps its own stack of directory
// handles (so ".." never asks the kernel for a parent), expands relative
// symlinks itself (at most kMaxSymlinks), refuses absolute symlinks and any
// ".." above the root, and finally checks that the directory it ended in is
// still beneath the root (against a directory being renamed out mid-walk).
// Symlinks that stay inside the root work in both modes.
//
// Limits (not escapes the path layer can see): a hard link inside the
// workspace to a file outside is the same file, so reading it reads that file
// (writes replace the name with rename(2), so they never write through it);
// and a directory the caller opened can be moved out of the workspace by
// someone else afterwards, taking later writes beneath it along.
//
// Roots. Each workspace root is a directory handle opened once (the
// daemon's at start-up, a session's at OpenSession, the latter beneath the
// daemon's) and carried to every call (CallInfo::workspaces); nothing here
// reopens a root by its path. Replacing the root's path after it was opened
// (`mv proj proj.orig; ln -s /elsewhere proj`) changes nothing a call sees:
// it keeps resolving beneath the directory it was given. The root's path name
// is kept only to name paths to the model and to recognise absolute paths.
//
// Choosing the root. A call may have several workspace roots (the session's;
// the first is the default). A relative path resolves against the first root.
// An absolute path must name a root by whole-component prefix ("/ws/a" is in
// "/ws"; "/ws-evil/a" is not); the first root, in order, that contains it wins
// (so with nested roots the default one is preferred). Anything else is
// refused. Lexical "." and empty components are dropped; ".." is left to the
// resolver, which refuses it only if it climbs above the root.
//
// Writing. Files are never opened for writing in place: WriteFileAtomic
// writes a temp file next to the target and renames it over the name, in a
// directory handle from OpenDirectory / MakeDirectories.
//
// Error convention (every function here; tools pass these statuses through):
//   malformed path: empty, NUL byte, longer than PATH_MAX, a component longer
//     than NAME_MAX                      -> InvalidArgument   (INVALID_ARGUMENTS)
//   the path leaves the workspace: "..", absolute path outside every root,
//     a symlink that leads out or is absolute, a magic link
//                                        -> ToolError(kDenied) (DENIED),
//                                           "path '../x' is outside the workspace: ..."
//   the path does not exist              -> NotFound          (TOOL_FAILED),
//                                           "no such file or directory: src/x.cc"
//   wrong kind (a directory where a file is wanted, a fifo, a symlink at a
//     write target), already exists, symlink loop, permission denied by the
//     file system, concurrent change     -> FailedPrecondition (TOOL_FAILED)
//   anything else the OS reports         -> Unknown, with strerror (TOOL_FAILED)
// Messages name paths by their display form (relative to the default root).
//
// Thread safety: every function is safe to call concurrently. ConfinedRoot is
// immutable.
#ifndef TOOLEXEC_TOOLS_WORKSPACE_CONFINED_H_
#define TOOLEXEC_TOOLS_WORKSPACE_CONFINED_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/runtime/file_io.h"

namespace toolexec::fs {

// The file primitives of the runtime (tools/runtime/file_io.h), under the
// names the tools use.
using ::toolexec::AtomicWriteOptions;
using ::toolexec::ErrnoStatus;
using ::toolexec::FileIdentity;
using ::toolexec::UniqueFd;
using ::toolexec::WriteFileAtomic;

// The most symlinks one resolution follows (the kernel's own limit is 40).
inline constexpr int kMaxSymlinks = 40;

struct WorkspacePath;

// One workspace root: an O_PATH|O_DIRECTORY handle to it, opened once.
// Immutable; shared by every call that uses the root.
class ConfinedRoot final {
 public:
  // Opens `path` (absolute; trusted configuration, so symlinks in it are
  // followed). FailedPrecondition if it is not an existing directory.
  static absl::StatusOr<std::shared_ptr<const ConfinedRoot>> Open(absl::string_view path);
  // Opens the directory `dir`, resolved beneath its own root like any path,
  // as a root of its own (a session's workspace inside the daemon's). Its
  // path() is where the kernel found it. Errors as OpenDirectory's: DENIED for
  // a path that leaves dir.root, NotFound, FailedPrecondition "'x' is not a
  // directory".
  static absl::StatusOr<std::shared_ptr<const ConfinedRoot>> OpenWithin(const WorkspacePath& dir);

  // Absolute, without a trailing slash (except "/"). A name only: what is
  // there now may be another directory than fd().
  const std::string& path() const { return path_; }
  // O_PATH|O_DIRECTORY|O_CLOEXEC, above 2 (so it can be handed to a child
  // process as it is); valid for this object's life. Usable as the dirfd of
  // *at() calls, never for reading.
  int fd() const { return fd_.get(); }

 private:
  ConfinedRoot(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  static absl::StatusOr<std::shared_ptr<const ConfinedRoot>> Make(std::string path, UniqueFd fd);

  std::string path_;
  UniqueFd fd_;
};

// A user-supplied path mapped onto one root; nothing is opened yet.
struct WorkspacePath {
  std::shared_ptr<const ConfinedRoot> root;
  // Relative to root: no leading "/", no "." or empty components, "." for the
  // root itself. May contain ".." (the kernel decides whether it stays inside).
  std::string relative;
  // How to name the path to the model: `relative` for the default (first)
  // root, "<root>/<relative>" for another root, so it can be passed back as is.
  std::string display;
  // The path ended in "/" or "/." (it must name a directory, as for open(2)).
  bool trailing_slash = false;
  // `root` is the call's first (default) workspace.
  bool is_default_root = true;

  // The same root with another relative path (normalized; display recomputed).
  WorkspacePath WithRelative(absl::string_view relative) const;
  // The last component of `relative` ("" for the root itself).
  std::string BaseName() const;
  // The parent of `relative` ("." for a single component). Lexical: the
  // parent of "a/.." is "a".
  WorkspacePath Parent() const;
};

// Checks `path` lexically (InvalidArgument: empty, NUL, > PATH_MAX, a component
// > NAME_MAX; `param` names the argument in messages) and maps it onto one of
// `workspaces` (see "Choosing the root"). DENIED for an absolute path outside
// every root; FailedPrecondition when `workspaces` is empty.
absl::StatusOr<WorkspacePath> ResolveWorkspacePath(
    const std::vector<std::shared_ptr<const ConfinedRoot>>& workspaces, absl::string_view path,
    absl::string_view param = "file_path");

// Where the kernel says the open file `fd` is, through /proc/self/fd: an
// absolute path, or "" when it cannot tell (no /proc, not a path).
std::string FdPath(int fd);

// Whether a final symlink is followed (it must still stay inside the root).
enum class FollowFinal { kYes, kNo };

// Opens `path` beneath its root with open(2) `flags` (O_RDONLY, O_PATH,
// O_DIRECTORY, O_NONBLOCK, ...; O_CLOEXEC is added; O_CREAT/O_TRUNC are
// refused: create files with WriteFileAtomic). kNo behaves like O_NOFOLLOW:
// a final symlink fails (FailedPrecondition "is a symbolic link"), except with
// O_PATH, which returns a handle to the link itself.
absl::StatusOr<UniqueFd> OpenBeneath(const WorkspacePath& path, int flags,
                                     FollowFinal follow = FollowFinal::kYes);

// Why a tool that never writes through symbolic links refuses the link at
// `path` (its final component): DENIED, as for any escape, when the link leads
// out of the workspace; otherwise FailedPrecondition saying `tool` does not
// write through links and to write to the file it points to.
absl::Status RefuseFinalSymlink(const WorkspacePath& path, absl::string_view tool);


// A regular file opened O_RDONLY, with its stat. Refuses directories ("is a
// directory"), fifos, sockets and devices ("is not a regular file") without
// blocking on a fifo, and a path with a trailing slash ("is not a directory").
struct OpenedFile {
  UniqueFd fd;
  struct stat st;
};
absl::StatusOr<OpenedFile> OpenRegularFile(const WorkspacePath& path,
                                           FollowFinal follow = FollowFinal::kYes);

// A directory opened O_RDONLY|O_DIRECTORY (readable with fdopendir/getdents,
// usable as a dirfd, fsync-able). To walk a tree beneath it, open children with
// openat(dir, name, O_NOFOLLOW | ...) on single names from getdents: that can
// never leave the tree. To follow a symlink met in a walk, resolve its
// workspace-relative path again with OpenBeneath.
absl::StatusOr<UniqueFd> OpenDirectory(const WorkspacePath& path);

// OpenDirectory, creating each missing directory of `path` (mode 0777 & ~umask)
// on the way. Every component is created with mkdirat() in a directory handle
// already resolved beneath the root, then reopened beneath the root. A path
// that would leave the root ("new/../../x") is refused before anything is
// created.
absl::StatusOr<UniqueFd> MakeDirectories(const WorkspacePath& path);

// openat2(2) of `path` in `dirfd` with open(2) `flags` (| O_CLOEXEC) and
// `resolve` (RESOLVE_BENEATH, ...): the descriptor, or -1 with errno (ENOSYS
// where the kernel lacks the call).
long Openat2(int dirfd, const char* path, int flags, uint64_t resolve);

namespace internal {

// Which resolver OpenBeneath uses. kAuto: openat2, falling back to the walk
// when the kernel lacks it. Tests force one or the other.
enum class Resolver { kAuto, kOpenat2, kWalk };
void SetResolverForTesting(Resolver resolver);
// Whether openat2(2) works here (probed once).
bool Openat2Available();

struct ResolveFailure {
  int err = 0;          // errno-like: EXDEV (escape), ELOOP, ENOENT, ENOTDIR, ...
  std::string detail;   // for EXDEV/ELOOP: what leaves, e.g. "symbolic link 'a/l' points to '/etc'"
};

// The user-space resolver (the ENOSYS fallback), usable on its own: resolves
// `relative` beneath `root_fd` (an O_PATH directory handle) and opens the
// result with `flags` (| O_CLOEXEC). On failure fills `failure` and returns an
// invalid fd. Also used to explain an EXDEV from openat2.
UniqueFd WalkBeneath(int root_fd, absl::string_view relative, int flags, FollowFinal follow,
                     ResolveFailure* failure);

}  // namespace internal

}  // namespace toolexec::fs

#endif  // TOOLEXEC_TOOLS_WORKSPACE_CONFINED_H_
