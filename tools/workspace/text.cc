#include "tools/workspace/text.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace toolexec::fs {
namespace {

struct Magic {
  size_t offset;
  absl::string_view bytes;
  const char* mime;
  bool decisive;  // binary even without a NUL byte in the first 8 KiB
};

// Ordered: the first match wins.
constexpr Magic kMagics[] = {
    {0, absl::string_view("\x89PNG\r\n\x1a\n", 8), "image/png", true},
    {0, absl::string_view("\xff\xd8\xff", 3), "image/jpeg", true},
    {0, "GIF87a", "image/gif", true},
    {0, "GIF89a", "image/gif", true},
    {0, "%PDF-", "application/pdf", true},
    {0, absl::string_view("PK\x03\x04", 4), "application/zip", true},
    {0, absl::string_view("PK\x05\x06", 4), "application/zip", true},
    {0, absl::string_view("\x1f\x8b", 2), "application/gzip", true},
    {0, absl::string_view("\xfd" "7zXZ\x00", 6), "application/x-xz", true},
    {0, absl::string_view("\x28\xb5\x2f\xfd", 4), "application/zstd", true},
    {0, "BZh", "application/x-bzip2", false},
    {0, absl::string_view("7z\xbc\xaf\x27\x1c", 6), "application/x-7z-compressed", true},
    {0, absl::string_view("\x7f" "ELF", 4), "application/x-executable", true},
    {0, absl::string_view("\0asm", 4), "application/wasm", true},
    {0, absl::string_view("SQLite format 3\0", 16), "application/vnd.sqlite3", true},
    {0, absl::string_view("\xca\xfe\xba\xbe", 4), "application/java-vm", true},
    {0, absl::string_view("\xcf\xfa\xed\xfe", 4), "application/x-mach-binary", true},
    {0, "OggS", "audio/ogg", true},
    {0, "fLaC", "audio/flac", true},
    {0, "ID3", "audio/mpeg", false},
    {0, "wOFF", "font/woff", true},
    {0, "wOF2", "font/woff2", true},
    {0, "MZ", "application/vnd.microsoft.portable-executable", false},
    {0, "BM", "image/bmp", false},
    {0, absl::string_view("II*\0", 4), "image/tiff", true},
    {0, absl::string_view("MM\0*", 4), "image/tiff", true},
    {0, absl::string_view("\0\0\1\0", 4), "image/x-icon", true},
    {257, "ustar", "application/x-tar", true},
    {4, "ftyp", "video/mp4", true},
};

const Magic* FindMagic(absl::string_view head) {
  for (const Magic& m : kMagics) {
    if (head.size() >= m.offset + m.bytes.size() &&
        head.substr(m.offset, m.bytes.size()) == m.bytes) {
      return &m;
    }
  }
  return nullptr;
}

// RIFF containers name their type at offset 8.
const char* RiffMime(absl::string_view head) {
  if (head.size() < 12 || head.substr(0, 4) != "RIFF") return nullptr;
  absl::string_view kind = head.substr(8, 4);
  if (kind == "WEBP") return "image/webp";
  if (kind == "WAVE") return "audio/wav";
  if (kind == "AVI ") return "video/x-msvideo";
  return "application/octet-stream";
}

struct Ext {
  const char* ext;
  const char* mime;
};
constexpr Ext kExtensions[] = {
    {"png", "image/png"},         {"jpg", "image/jpeg"},        {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},         {"webp", "image/webp"},       {"svg", "image/svg+xml"},
    {"ico", "image/x-icon"},      {"pdf", "application/pdf"},   {"zip", "application/zip"},
    {"jar", "application/java-archive"},                        {"gz", "application/gzip"},
    {"tar", "application/x-tar"}, {"wasm", "application/wasm"}, {"json", "application/json"},
    {"xml", "application/xml"},   {"html", "text/html"},        {"htm", "text/html"},
    {"css", "text/css"},          {"js", "text/javascript"},    {"mjs", "text/javascript"},
    {"md", "text/markdown"},      {"csv", "text/csv"},          {"yaml", "application/yaml"},
    {"yml", "application/yaml"},  {"mp3", "audio/mpeg"},        {"mp4", "video/mp4"},
    {"wav", "audio/wav"},         {"so", "application/x-sharedlib"},
    {"o", "application/x-object"}, {"a", "application/x-archive"},
    {"class", "application/java-vm"}, {"db", "application/vnd.sqlite3"},
    {"sqlite", "application/vnd.sqlite3"},
};

}  // namespace

bool LooksBinary(absl::string_view head) {
  if (head.size() > kBinarySniffBytes) head = head.substr(0, kBinarySniffBytes);
  if (std::memchr(head.data(), '\0', head.size()) != nullptr) return true;
  const Magic* m = FindMagic(head);
  return m != nullptr && m->decisive;
}

std::string GuessMimeType(absl::string_view head, absl::string_view name) {
  if (const char* riff = RiffMime(head)) return riff;
  if (const Magic* m = FindMagic(head)) return m->mime;
  if (head.size() >= 2 && (head.substr(0, 2) == "\xff\xfe" || head.substr(0, 2) == "\xfe\xff")) {
    return "text/plain; charset=utf-16";
  }
  size_t dot = name.rfind('.');
  size_t slash = name.rfind('/');
  if (dot != absl::string_view::npos && (slash == absl::string_view::npos || dot > slash)) {
    std::string ext = absl::AsciiStrToLower(name.substr(dot + 1));
    for (const Ext& e : kExtensions) {
      if (ext == e.ext) return e.mime;
    }
  }
  return LooksBinary(head) ? "application/octet-stream" : "text/plain";
}

}  // namespace toolexec::fs
