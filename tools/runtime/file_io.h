// File primitives shared by the runtime (disk artifacts) and the built-in
// tools (tools/workspace re-exports them): an owned descriptor, the atomic
// write, and the one convention for turning an errno into a status.
//
// Thread safety: the functions are safe to call concurrently; a UniqueFd is
// owned by one user at a time.
#ifndef TOOLEXEC_TOOLS_RUNTIME_FILE_IO_H_
#define TOOLEXEC_TOOLS_RUNTIME_FILE_IO_H_

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace toolexec {

// An owned file descriptor. Move-only; closes on destruction.
class UniqueFd final {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes the descriptor held (if any) and holds `fd`.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// The identity of a file at one moment, to detect that it changed.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  struct timespec mtime = {};
  static FileIdentity Of(const struct stat& st);
  bool operator==(const FileIdentity& o) const;
};

struct AtomicWriteOptions {
  // false: fail FailedPrecondition ("already exists") if `name` exists at the
  // moment of the rename (renameat2 RENAME_NOREPLACE; link+unlink where the
  // file system lacks it). true: replace it.
  bool replace_existing = false;
  // Permission bits for the file (applied with fchmod, so not masked by the
  // umask). Unset: 0666 & ~umask.
  std::optional<mode_t> mode;
  // Best effort fchown (kept from the file being replaced); failures ignored.
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  // If set, the current `name` must still be this file right before the
  // rename, else FailedPrecondition ("changed while it was being edited").
  std::optional<FileIdentity> expect;
  // How to name the file in messages.
  std::string display;
};

// Writes `data` to `name` (one component) in `dir_fd` (a directory handle
// opened O_RDONLY) atomically: a temp file in the same directory
// (".<name>.tmp-<random>", O_EXCL|O_NOFOLLOW), write, fsync, rename over
// `name`, fsync the directory. A crash leaves the old or the new content,
// never a mix. rename(2) replaces a directory entry and never follows a
// symlink at `name`, so a planted link is replaced, not written through
// (callers that must refuse symlinks check with fstatat first). The temp file
// is removed on any failure. Errors follow ErrnoStatus.
absl::Status WriteFileAtomic(int dir_fd, absl::string_view name, absl::string_view data,
                             const AtomicWriteOptions& options);

// The status for an errno from an operation on `display` ("doing" names the
// operation, e.g. "writing"): NotFound "no such file or directory: x" for
// ENOENT; DENIED "path 'x' is outside the workspace: ..." for EXDEV;
// InvalidArgument for ENAMETOOLONG; FailedPrecondition for the wrong kind of
// file, an existing file, a permission the file system refuses, a symlink
// loop, a full or read-only file system and a tree that kept changing;
// Unknown with the system's text otherwise.
absl::Status ErrnoStatus(int err, absl::string_view display, absl::string_view doing = "");

// Creates `path` and any missing parents (mode `mode`, as `mkdir -p`); OK when
// it exists. The errno of the first mkdir that failed otherwise.
absl::Status MakeDirectories(const std::string& path, mode_t mode);

// DENIED: "path '<display>' is outside the workspace: <detail>".
absl::Status OutsideWorkspaceError(absl::string_view display, absl::string_view detail);

// The system's text for an errno ("No such file or directory").
std::string ErrnoText(int err);

// What kind of file `mode` is, for a message that refuses it: "a directory",
// "a fifo", "a socket", "a character device", "a block device", or "not a
// regular file" (a regular file, or anything else).
const char* FileKindName(mode_t mode);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_FILE_IO_H_
