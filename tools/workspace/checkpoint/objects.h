// The checkpoint store's content: each distinct file content once, named by
// its SHA-256, zlib-compressed, in <store_dir>/objects/<2 hex>/<62 hex>.
//
// Objects are written to a temp file and renamed into place without
// replacing (renameat2 RENAME_NOREPLACE), so concurrent writers of one
// content are harmless and a reader never sees half an object. They are not
// fsynced: a checkpoint outlives the daemon, not the machine's crash (Get
// verifies the hash, so damage is reported, never restored).
//
// Thread safety: every method may be called concurrently.
#ifndef TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_OBJECTS_H_
#define TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_OBJECTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/runtime/file_io.h"

namespace toolexec::checkpoint {

// Writes `data` to `name` in the directory `dir_fd` through a temp file and
// a rename, without fsync (the store's durability is the daemon's life, see
// above). `replace`: whether an existing `name` is replaced; when it is not,
// an existing one leaves `*existed` true and the store unchanged. Errors name
// `display`.
absl::Status WriteUnsynced(int dir_fd, const std::string& name, absl::string_view data, bool replace,
                           const std::string& display, bool* existed = nullptr);

class ObjectStore final {
 public:
  // Opens (creating) `dir`.
  static absl::StatusOr<std::unique_ptr<ObjectStore>> Open(const std::string& dir);

  // Stores `data` under `hash` (its SHA-256 in hex) unless it is there: the
  // bytes added to the store (0 when it was there).
  absl::StatusOr<uint64_t> Put(absl::string_view hash, absl::string_view data);
  // The content of `hash`, `size` bytes; DataLoss if the object is missing,
  // damaged or not that content.
  absl::StatusOr<std::string> Get(absl::string_view hash, uint64_t size) const;
  // Removes `hash`: the bytes freed (0 if it was not there).
  uint64_t Remove(absl::string_view hash);
  // Calls `fn(hash, bytes)` for every object.
  void ForEach(const std::function<void(const std::string& hash, uint64_t bytes)>& fn) const;

 private:
  ObjectStore(std::string dir, UniqueFd fd) : dir_(std::move(dir)), fd_(std::move(fd)) {}

  std::string dir_;
  UniqueFd fd_;  // the objects directory
};

}  // namespace toolexec::checkpoint

#endif  // TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_OBJECTS_H_
