#include "tools/workspace/checkpoint/objects.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tools/workspace/sha256.h"

namespace toolexec::checkpoint {
namespace {

std::atomic<uint64_t> temp_counter{0};

bool WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool ValidHash(absl::string_view hash) {
  if (hash.size() != 64) return false;
  for (char c : hash) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

absl::Status WriteUnsynced(int dir_fd, const std::string& name, absl::string_view data, bool replace,
                           const std::string& display, bool* existed) {
  const size_t slash = name.rfind('/');
  const std::string tmp = absl::StrCat(slash == std::string::npos ? "" : name.substr(0, slash + 1),
                                       ".tmp-", getpid(), "-", temp_counter.fetch_add(1));
  UniqueFd out(openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400));
  if (!out.valid()) return ErrnoStatus(errno, display, "creating");
  if (!WriteAll(out.get(), data)) {
    const int err = errno;
    unlinkat(dir_fd, tmp.c_str(), 0);
    return ErrnoStatus(err, display, "writing");
  }
  out.reset();
  if (renameat2(dir_fd, tmp.c_str(), dir_fd, name.c_str(), replace ? 0 : RENAME_NOREPLACE) != 0) {
    const int err = errno;
    unlinkat(dir_fd, tmp.c_str(), 0);
    if (err == EEXIST && existed != nullptr) {
      *existed = true;
      return absl::OkStatus();
    }
    return ErrnoStatus(err, display, "storing");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ObjectStore>> ObjectStore::Open(const std::string& dir) {
  if (absl::Status made = MakeDirectories(dir, 0700); !made.ok()) return made;
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, dir, "opening");
  return std::unique_ptr<ObjectStore>(new ObjectStore(dir, std::move(fd)));
}

absl::StatusOr<uint64_t> ObjectStore::Put(absl::string_view hash, absl::string_view data) {
  if (!ValidHash(hash)) return absl::InvalidArgumentError(absl::StrCat("bad object name ", hash));
  const std::string sub(hash.substr(0, 2));
  const std::string name(hash.substr(2));
  const std::string rel = absl::StrCat(sub, "/", name);
  struct stat st;
  if (fstatat(fd_.get(), rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return 0;
  if (mkdirat(fd_.get(), sub.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat(dir_, "/", sub), "creating");
  }
  // Level 1: the fastest; source text still shrinks 3-4x.
  uLongf bound = compressBound(static_cast<uLong>(data.size()));
  std::string packed(bound, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &bound,
                reinterpret_cast<const Bytef*>(data.data()), static_cast<uLong>(data.size()),
                Z_BEST_SPEED) != Z_OK) {
    return absl::InternalError(absl::StrCat("compressing object ", hash, " failed"));
  }
  packed.resize(bound);
  bool existed = false;
  if (absl::Status s = WriteUnsynced(fd_.get(), rel, packed, false, absl::StrCat(dir_, "/", rel),
                                     &existed);
      !s.ok()) {
    return s;
  }
  return existed ? 0 : packed.size();  // another writer may have stored the same content
}

absl::StatusOr<std::string> ObjectStore::Get(absl::string_view hash, uint64_t size) const {
  auto damaged = [&](absl::string_view why) {
    return absl::DataLossError(
        absl::StrCat("checkpoint object ", hash, " in ", dir_, " is ", why));
  };
  if (!ValidHash(hash)) return damaged("misnamed");
  const std::string rel = absl::StrCat(hash.substr(0, 2), "/", hash.substr(2));
  UniqueFd in(openat(fd_.get(), rel.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in.valid()) return damaged(absl::StrCat("unreadable (", ErrnoText(errno), ")"));
  std::string packed;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(in.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return damaged(absl::StrCat("unreadable (", ErrnoText(errno), ")"));
    if (n == 0) break;
    packed.append(buf, static_cast<size_t>(n));
  }
  std::string data(size, '\0');
  uLongf got = static_cast<uLongf>(size);
  // uncompress needs a non-null destination even for empty content.
  Bytef empty = 0;
  if (uncompress(size == 0 ? &empty : reinterpret_cast<Bytef*>(data.data()), &got,
                 reinterpret_cast<const Bytef*>(packed.data()),
                 static_cast<uLong>(packed.size())) != Z_OK ||
      got != size) {
    return damaged("damaged (does not decompress to its size)");
  }
  if (fs::Sha256Hex(data) != hash) return damaged("damaged (content does not match its hash)");
  return data;
}

uint64_t ObjectStore::Remove(absl::string_view hash) {
  if (!ValidHash(hash)) return 0;
  const std::string rel = absl::StrCat(hash.substr(0, 2), "/", hash.substr(2));
  struct stat st;
  if (fstatat(fd_.get(), rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  if (unlinkat(fd_.get(), rel.c_str(), 0) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

void ObjectStore::ForEach(
    const std::function<void(const std::string& hash, uint64_t bytes)>& fn) const {
  UniqueFd top(openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* d = top.valid() ? fdopendir(top.release()) : nullptr;
  if (d == nullptr) return;
  while (struct dirent* sub = readdir(d)) {
    const absl::string_view prefix = sub->d_name;
    if (prefix.size() != 2 || prefix[0] == '.') continue;
    UniqueFd sub_fd(openat(fd_.get(), sub->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    DIR* sd = sub_fd.valid() ? fdopendir(sub_fd.get()) : nullptr;
    if (sd == nullptr) continue;
    sub_fd.release();
    while (struct dirent* obj = readdir(sd)) {
      const absl::string_view name = obj->d_name;
      struct stat st;
      if (name.size() != 62 || fstatat(dirfd(sd), obj->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (absl::StartsWith(name, ".tmp-")) unlinkat(dirfd(sd), obj->d_name, 0);  // left by a crash
        continue;
      }
      fn(absl::StrCat(prefix, name), static_cast<uint64_t>(st.st_size));
    }
    closedir(sd);
  }
  closedir(d);
}

}  // namespace toolexec::checkpoint
