#include "tools/runtime/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>  // renameat2
#include <string.h>
#include <unistd.h>

#include <cerrno>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "tools/runtime/tool.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

namespace toolexec {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

FileIdentity FileIdentity::Of(const struct stat& st) {
  FileIdentity id;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.size = st.st_size;
  id.mtime = st.st_mtim;
  return id;
}

bool FileIdentity::operator==(const FileIdentity& o) const {
  return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
         mtime.tv_nsec == o.mtime.tv_nsec;
}

std::string ErrnoText(int err) {
  const char* text = strerrordesc_np(err);
  return text != nullptr ? std::string(text) : absl::StrCat("errno ", err);
}

absl::Status OutsideWorkspaceError(absl::string_view display, absl::string_view detail) {
  return ToolError(ErrorCode::kDenied,
                   absl::StrCat("path '", display, "' is outside the workspace: ", detail));
}

absl::Status ErrnoStatus(int err, absl::string_view display, absl::string_view doing) {
  std::string prefix = doing.empty() ? "" : absl::StrCat(doing, " ");
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(absl::StrCat(prefix, "no such file or directory: ", display));
    case ENOTDIR:
      return absl::FailedPreconditionError(
          absl::StrCat(prefix, "'", display, "': a component of the path is not a directory"));
    case EISDIR:
      return absl::FailedPreconditionError(absl::StrCat(prefix, "'", display, "' is a directory"));
    case EACCES:
    case EPERM:
      return absl::FailedPreconditionError(
          absl::StrCat(prefix, "'", display, "': permission denied by the file system"));
    case EEXIST:
      return absl::FailedPreconditionError(absl::StrCat(prefix, "'", display, "' already exists"));
    case ENAMETOOLONG:
      return absl::InvalidArgumentError(absl::StrCat("path '", display, "' is too long"));
    case ELOOP:
      return absl::FailedPreconditionError(absl::StrCat(
          prefix, "'", display, "': too many levels of symbolic links (a symlink loop?)"));
    case EXDEV:
      return OutsideWorkspaceError(display, "it leads out of the workspace");
    case ENOSPC:
    case EDQUOT:
      return absl::FailedPreconditionError(
          absl::StrCat(prefix, "'", display, "': no space left on the device"));
    case EROFS:
      return absl::FailedPreconditionError(
          absl::StrCat(prefix, "'", display, "': the file system is read-only"));
    case EAGAIN:
      return absl::FailedPreconditionError(absl::StrCat(
          prefix, "'", display, "': the directory tree kept changing during the lookup; retry"));
    default:
      return absl::UnknownError(absl::StrCat(prefix, "'", display, "': ", ErrnoText(err)));
  }
}

const char* FileKindName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

absl::Status WriteFileAtomic(int dir_fd, absl::string_view name, absl::string_view data,
                             const AtomicWriteOptions& options) {
  const std::string display = options.display.empty() ? std::string(name) : options.display;
  if (name.empty() || name == "." || name == ".." || name.find('/') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("'", display, "' does not end in a file name"));
  }
  const std::string target(name);
  thread_local absl::BitGen bitgen;
  std::string tmp;
  UniqueFd out;
  const mode_t create_mode = 0666;
  for (int attempt = 0; attempt < 8 && !out.valid(); ++attempt) {
    tmp = absl::StrCat(".", name.substr(0, 200), ".tmp-",
                       absl::Hex(absl::Uniform<uint64_t>(bitgen), absl::kZeroPad16));
    out.reset(openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                     create_mode));
    if (!out.valid() && errno != EEXIST) {
      return ErrnoStatus(errno, display, "creating a temp file for");
    }
  }
  if (!out.valid()) return ErrnoStatus(EEXIST, tmp, "creating temp file");

  auto fail = [&](absl::Status status) {
    out.reset();
    unlinkat(dir_fd, tmp.c_str(), 0);
    return status;
  };
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = write(out.get(), p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(ErrnoStatus(errno, display, "writing"));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (options.uid.has_value() || options.gid.has_value()) {
    // Keeping the owner needs privileges we may lack; the content matters more.
    (void)!fchown(out.get(), options.uid.value_or(static_cast<uid_t>(-1)),
                  options.gid.value_or(static_cast<gid_t>(-1)));
  }
  // The mode last: write(2) by a normal user and chown(2) by anyone clear
  // set-user-ID and set-group-ID. Those stay only where the owner (group) was
  // kept, so a file is never made set-ID to the daemon's own user.
  if (options.mode.has_value()) {
    mode_t mode = *options.mode & 07777;
    struct stat st;
    if (fstat(out.get(), &st) != 0) st.st_uid = st.st_gid = static_cast<uid_t>(-1);
    if (options.uid.has_value() && st.st_uid != *options.uid) mode &= ~S_ISUID;
    if (options.gid.has_value() && st.st_gid != *options.gid) mode &= ~S_ISGID;
    if (fchmod(out.get(), mode) != 0) {
      return fail(ErrnoStatus(errno, display, "setting the mode of"));
    }
  }
  if (fsync(out.get()) != 0) return fail(ErrnoStatus(errno, display, "syncing"));
  if (close(out.release()) != 0) return fail(ErrnoStatus(errno, display, "closing"));

  if (options.expect.has_value()) {
    struct stat st;
    if (fstatat(dir_fd, target.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !(FileIdentity::Of(st) == *options.expect)) {
      return fail(absl::FailedPreconditionError(absl::StrCat(
          "'", display, "' changed while it was being edited; read it again and retry")));
    }
  }
  if (options.replace_existing) {
    if (renameat(dir_fd, tmp.c_str(), dir_fd, target.c_str()) != 0) {
      return fail(ErrnoStatus(errno, display, "replacing"));
    }
  } else if (renameat2(dir_fd, tmp.c_str(), dir_fd, target.c_str(), RENAME_NOREPLACE) != 0) {
    int err = errno;
    if (err != EINVAL && err != ENOSYS) return fail(ErrnoStatus(err, display, "creating"));
    // The file system has no RENAME_NOREPLACE: link(2) also refuses to replace.
    if (linkat(dir_fd, tmp.c_str(), dir_fd, target.c_str(), 0) != 0) {
      return fail(ErrnoStatus(errno, display, "creating"));
    }
    unlinkat(dir_fd, tmp.c_str(), 0);
  }
  // Make the rename itself durable. Some file systems refuse fsync on a directory.
  if (fsync(dir_fd) != 0 && errno != EINVAL && errno != EBADF) {
    return ErrnoStatus(errno, display, "syncing the directory of");
  }
  return absl::OkStatus();
}

absl::Status MakeDirectories(const std::string& path, mode_t mode) {
  for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    const std::string prefix = path.substr(0, end);
    if (!prefix.empty() && mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      return ErrnoStatus(errno, prefix, "creating");
    }
    if (end == std::string::npos) return absl::OkStatus();
  }
}

}  // namespace toolexec
