// Text helpers shared by the file and search tools: is it binary, what mime
// type. (UTF-8 made safe for JSON/protobuf strings: tools/runtime/utf8.h.)
// Thread safety: pure functions.
#ifndef TOOLEXEC_TOOLS_WORKSPACE_TEXT_H_
#define TOOLEXEC_TOOLS_WORKSPACE_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace toolexec::fs {

// How much of a file's start LooksBinary needs to decide.
inline constexpr size_t kBinarySniffBytes = 8192;

// True for content that should be described, not shown: a NUL byte in `head`
// (pass the first kBinarySniffBytes), or a known binary magic number (PNG,
// JPEG, GIF, PDF, ZIP, gzip, xz, zstd, bzip2, 7z, ELF, wasm, SQLite, ...).
bool LooksBinary(absl::string_view head);

// A best guess at the mime type from the magic number in `head`, else from
// the extension of `name`; "application/octet-stream" when unknown binary,
// "text/plain" when unknown text.
std::string GuessMimeType(absl::string_view head, absl::string_view name);

}  // namespace toolexec::fs

#endif  // TOOLEXEC_TOOLS_WORKSPACE_TEXT_H_
