#include "tools/workspace/checkpoint/manifest.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace toolexec::checkpoint {
namespace {

constexpr absl::string_view kMagic = "toolexec-checkpoint/1";

void AppendEscaped(std::string* out, absl::string_view s) {
  for (char c : s) {
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\n':
        out->append("\\n");
        break;
      default:
        out->push_back(c);
    }
  }
}

// Permission bits in octal, as "%o" writes them.
void AppendOctal(std::string* out, uint32_t mode) {
  char digits[12];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + (mode & 7));
    mode >>= 3;
  } while (mode != 0);
  while (n > 0) out->push_back(digits[--n]);
}

bool Unescape(absl::string_view s, std::string* out) {
  out->clear();
  out->reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out->push_back(s[i]);
      continue;
    }
    if (++i == s.size()) return false;
    switch (s[i]) {
      case '\\':
        out->push_back('\\');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'n':
        out->push_back('\n');
        break;
      default:
        return false;
    }
  }
  return true;
}

bool ParseMode(absl::string_view s, uint32_t* mode) {
  if (s.empty() || s.size() > 6) return false;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '7') return false;
    v = v * 8 + static_cast<uint32_t>(c - '0');
  }
  *mode = v & 07777;
  return true;
}

}  // namespace

const char* LeftOutText(LeftOutReason reason) {
  switch (reason) {
    case LeftOutReason::kIgnoredFile:
      return "ignored";
    case LeftOutReason::kIgnoredDir:
      return "ignored directory";
    case LeftOutReason::kTooLarge:
      return "larger than max_file_bytes";
    case LeftOutReason::kUnreadable:
      return "unreadable";
    case LeftOutReason::kInTheWay:
      return "a directory holding ignored or left-out content is there now";
  }
  return "left out";
}

std::string SerializeManifest(const Manifest& m) {
  std::string out;
  out.reserve(64 + m.entries.size() * 120);
  absl::StrAppend(&out, kMagic, "\n");
  const CheckpointInfo& info = m.info;
  auto header = [&out](absl::string_view key, absl::string_view value) {
    absl::StrAppend(&out, "=", key, "\t");
    AppendEscaped(&out, value);
    out.push_back('\n');
  };
  header("id", info.id);
  header("session", info.session_id);
  header("batch", info.batch_id);
  header("created_ns", absl::StrCat(absl::ToUnixNanos(info.created_at)));
  for (const std::string& tool : info.tools) header("tool", tool);
  header("files_changed", absl::StrCat(info.files_changed));
  // Fixed width: a writer may patch it in after measuring the text.
  header("bytes_stored", absl::StrFormat("%020u", info.bytes_stored));
  header("root", info.root);
  header("owner", info.owner);
  for (const Entry& e : m.entries) {
    out.push_back(static_cast<char>(e.type));
    out.push_back('\t');
    AppendOctal(&out, e.mode & 07777);
    out.push_back('\t');
    switch (e.type) {
      case EntryType::kFile:
        absl::StrAppend(&out, e.size, "\t", e.hash, "\t", e.dev, "\t", e.ino, "\t", e.mtime_ns, "\t",
                        e.ctime_ns, "\t");
        break;
      case EntryType::kSymlink:
        AppendEscaped(&out, e.target);
        out.push_back('\t');
        break;
      case EntryType::kDir:
        break;
    }
    AppendEscaped(&out, e.path);
    out.push_back('\n');
  }
  for (const LeftOut& l : m.left_out) {
    absl::StrAppend(&out, "x\t", std::string(1, static_cast<char>(l.reason)), "\t", l.size, "\t");
    AppendEscaped(&out, l.path);
    out.push_back('\n');
  }
  return out;
}

void SetBytesStored(std::string* text, uint64_t bytes_stored) {
  static constexpr char kKey[] = "\n=bytes_stored\t";
  const size_t at = text->find(kKey);
  if (at == std::string::npos) return;
  text->replace(at + sizeof(kKey) - 1, 20, absl::StrFormat("%020u", bytes_stored));
}

absl::StatusOr<Manifest> ParseManifest(absl::string_view text, absl::string_view source) {
  Manifest m;
  int line_no = 0;
  auto bad = [&](absl::string_view why) {
    return absl::DataLossError(
        absl::StrCat("checkpoint manifest ", source, " is damaged (line ", line_no, ": ", why, ")"));
  };
  bool first = true;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    ++line_no;
    if (first) {
      if (line != kMagic) return bad("not a checkpoint manifest");
      first = false;
      continue;
    }
    std::vector<absl::string_view> f = absl::StrSplit(line, '\t');
    const char kind = line[0];
    if (kind == '=') {
      if (f.size() != 2) return bad("header");
      const absl::string_view key = f[0].substr(1);
      std::string value;
      if (!Unescape(f[1], &value)) return bad("escape");
      CheckpointInfo& info = m.info;
      if (key == "id") {
        info.id = value;
      } else if (key == "session") {
        info.session_id = value;
      } else if (key == "batch") {
        info.batch_id = value;
      } else if (key == "created_ns") {
        int64_t ns = 0;
        if (!absl::SimpleAtoi(value, &ns)) return bad("created_ns");
        info.created_at = absl::FromUnixNanos(ns);
      } else if (key == "tool") {
        info.tools.push_back(value);
      } else if (key == "files_changed") {
        if (!absl::SimpleAtoi(value, &info.files_changed)) return bad("files_changed");
      } else if (key == "bytes_stored") {
        if (!absl::SimpleAtoi(value, &info.bytes_stored)) return bad("bytes_stored");
      } else if (key == "root") {
        info.root = value;
      } else if (key == "owner") {
        info.owner = value;
      }  // unknown keys: written by a later version; skipped
      continue;
    }
    if (kind == 'x') {
      if (f.size() != 4 || f[1].size() != 1) return bad("left-out entry");
      LeftOut l;
      const char r = f[1][0];
      if (r != 'i' && r != 'I' && r != 'b' && r != 'u') return bad("left-out reason");
      l.reason = static_cast<LeftOutReason>(r);
      if (!absl::SimpleAtoi(f[2], &l.size) || !Unescape(f[3], &l.path)) return bad("left-out entry");
      m.left_out.push_back(std::move(l));
      continue;
    }
    Entry e;
    if (f.size() < 3 || !ParseMode(f[1], &e.mode)) return bad("entry");
    if (kind == 'f') {
      if (f.size() != 9 || !absl::SimpleAtoi(f[2], &e.size) || f[3].size() != 64 ||
          !absl::SimpleAtoi(f[4], &e.dev) || !absl::SimpleAtoi(f[5], &e.ino) ||
          !absl::SimpleAtoi(f[6], &e.mtime_ns) || !absl::SimpleAtoi(f[7], &e.ctime_ns) ||
          !Unescape(f[8], &e.path)) {
        return bad("file entry");
      }
      e.type = EntryType::kFile;
      e.hash = std::string(f[3]);
    } else if (kind == 'l') {
      if (f.size() != 4 || !Unescape(f[2], &e.target) || !Unescape(f[3], &e.path)) {
        return bad("symlink entry");
      }
      e.type = EntryType::kSymlink;
    } else if (kind == 'd') {
      if (f.size() != 3 || !Unescape(f[2], &e.path)) return bad("directory entry");
      e.type = EntryType::kDir;
    } else {
      return bad("unknown entry kind");
    }
    if (e.path.empty()) return bad("empty path");
    m.entries.push_back(std::move(e));
  }
  if (first) return bad("empty");
  if (m.info.id.empty()) return bad("no id");
  return m;
}

}  // namespace toolexec::checkpoint
