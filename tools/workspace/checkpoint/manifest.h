// A checkpoint's manifest: what a workspace held at one moment, as the
// checkpoint store keeps it on disk (one file per checkpoint).
//
// Every entry below the workspace root that a restore puts back is listed,
// sorted by path (fs::PathLess): regular files (mode, size, the SHA-256 of
// their content, and the stat fields the next checkpoint compares to decide
// that the file is unchanged without reading it), symbolic links (their
// target, never followed) and directories (so empty ones come back too). What
// the checkpoint left out is listed as well: ignored entries (an ignored
// directory once, not its contents), files over the size limit and files it
// could not read, so a restore can say what it did not put back.
//
// The text format (one line each, fields separated by tabs, the path last;
// "\\", tab and newline in paths and link targets escaped as \\, \t, \n):
//   toolexec-checkpoint/1
//   =<key>\t<value>       header: id, session, batch, created_ns, tool (one
//                         line per tool), files_changed, bytes_stored (20
//                         digits, so it can be patched in place), root,
//                         owner (absent from older manifests: "")
//   f\t<mode>\t<size>\t<sha256>\t<dev>\t<ino>\t<mtime_ns>\t<ctime_ns>\t<path>
//   l\t<mode>\t<target>\t<path>
//   d\t<mode>\t<path>
//   x\t<reason>\t<size>\t<path>      left out: reason i (ignored file),
//                                    I (ignored directory), b (too big),
//                                    u (unreadable)
// Modes are octal permission bits (07777). A file whose mtime_ns is -1 may
// not be trusted from its stat fields (it changed too close to the moment
// it was read) and is read again next time.
#ifndef TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_MANIFEST_H_
#define TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_MANIFEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace toolexec::checkpoint {

enum class EntryType : char { kFile = 'f', kSymlink = 'l', kDir = 'd' };

struct Entry {
  std::string path;  // relative to the workspace root, '/'-separated
  EntryType type = EntryType::kFile;
  uint32_t mode = 0;  // permission bits
  // Files: the content's size and SHA-256 (lower-case hex).
  uint64_t size = 0;
  std::string hash;
  // Symlinks: the target as readlink(2) gives it.
  std::string target;
  // Files: the stat fields compared by the next checkpoint; mtime_ns -1 when
  // they must not be trusted.
  uint64_t dev = 0;
  uint64_t ino = 0;
  int64_t mtime_ns = -1;
  int64_t ctime_ns = -1;
};

enum class LeftOutReason : char {
  kIgnoredFile = 'i',
  kIgnoredDir = 'I',
  kTooLarge = 'b',
  kUnreadable = 'u',
  // A restore's only (never in a manifest): the checkpoint had a file or
  // link where a directory now holds what the tree leaves out, which a
  // restore never deletes.
  kInTheWay = 'w',
};

struct LeftOut {
  std::string path;
  LeftOutReason reason = LeftOutReason::kIgnoredFile;
  uint64_t size = 0;  // kTooLarge: the file's size
};

// What a checkpoint is, as listed to a client.
struct CheckpointInfo {
  std::string id;
  std::string session_id;
  std::string batch_id;
  absl::Time created_at;
  std::vector<std::string> tools;  // the batch's tools ("restore" for an undo checkpoint)
  uint32_t files_changed = 0;      // paths that differ from the session's previous checkpoint
  uint64_t bytes_stored = 0;       // bytes this checkpoint added to the store
  std::string root;                // the workspace's path
  // Who took it: the caller that owned the session (CallerIdentity::name;
  // "" = an unauthenticated caller). Only that caller may list, diff or
  // restore it, also once the session is closed or the daemon restarted.
  std::string owner;
};

struct Manifest {
  CheckpointInfo info;
  std::vector<Entry> entries;     // sorted by fs::PathLess
  std::vector<LeftOut> left_out;  // sorted by fs::PathLess
};

std::string SerializeManifest(const Manifest& manifest);
// Rewrites the bytes_stored header of serialized `text` in place.
void SetBytesStored(std::string* text, uint64_t bytes_stored);
// DataLoss naming `source` for text that is not a manifest.
absl::StatusOr<Manifest> ParseManifest(absl::string_view text, absl::string_view source);

// "why" a path was left out, for messages: "ignored", "over max_file_bytes", ...
const char* LeftOutText(LeftOutReason reason);

}  // namespace toolexec::checkpoint

#endif  // TOOLEXEC_TOOLS_WORKSPACE_CHECKPOINT_MANIFEST_H_
