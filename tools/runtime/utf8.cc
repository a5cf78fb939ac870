#include "tools/runtime/utf8.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace toolexec {
namespace {

enum class Step { kValid, kInvalid, kIncomplete };

// Classifies the sequence at p[0..n), n >= 1: kValid with *len its length;
// kInvalid with *len the length of its maximal subpart (at least 1), the bytes
// one U+FFFD replaces; kIncomplete when all n bytes are a valid prefix of a
// longer sequence (*len = n).
Step Classify(const unsigned char* p, size_t n, size_t* len) {
  const unsigned char c = p[0];
  if (c < 0x80) {
    *len = 1;
    return Step::kValid;
  }
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlongs
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;  // no overlongs
    if (c == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    *len = 1;
    return Step::kInvalid;
  }
  for (size_t i = 1; i < need; ++i) {
    if (i >= n) {
      *len = i;
      return Step::kIncomplete;
    }
    const unsigned char b = p[i];
    const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) {
      *len = i;
      return Step::kInvalid;
    }
  }
  *len = need;
  return Step::kValid;
}

// The end of the ASCII run starting at i, 8 bytes at a time.
size_t SkipAscii(const unsigned char* p, size_t n, size_t i) {
  while (i + 8 <= n) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (w & 0x8080808080808080ULL) break;
    i += 8;
  }
  while (i < n && p[i] < 0x80) ++i;
  return i;
}

}  // namespace

bool IsValidUtf8(absl::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while ((i = SkipAscii(p, n, i)) < n) {
    size_t len;
    if (Classify(p + i, n - i, &len) != Step::kValid) return false;
    i += len;
  }
  return true;
}

namespace {

// Appends up to `max_out_bytes` of output; false if it stopped early.
bool Append(std::string* out, absl::string_view s, size_t max_out_bytes, bool* replaced) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // The valid run from i, as long as it fits.
    size_t end = i;
    size_t len = 0;
    Step step = Step::kValid;
    while (end < n) {
      step = p[end] < 0x80 ? (len = 1, Step::kValid) : Classify(p + end, n - end, &len);
      if (step != Step::kValid || out->size() + (end - i) + len > max_out_bytes) break;
      end += len;
    }
    out->append(s.data() + i, end - i);
    i = end;
    if (i == n) break;
    if (step == Step::kValid) return false;  // the next character does not fit
    // An ill-formed sequence; one cut off by the end of `s` is its own
    // maximal subpart.
    if (out->size() + kUtf8Replacement.size() > max_out_bytes) return false;
    out->append(kUtf8Replacement.data(), kUtf8Replacement.size());
    *replaced = true;
    i += len;
  }
  return true;
}

}  // namespace

bool AppendSanitizedUtf8(std::string* out, absl::string_view s) {
  if (IsValidUtf8(s)) {
    out->append(s.data(), s.size());
    return false;
  }
  bool replaced = false;
  Append(out, s, std::numeric_limits<size_t>::max(), &replaced);
  return replaced;
}

bool AppendSanitizedUtf8Within(std::string* out, absl::string_view s, size_t max_out_bytes) {
  bool replaced = false;
  return Append(out, s, max_out_bytes, &replaced);
}

std::string SanitizeUtf8(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  AppendSanitizedUtf8(&out, s);
  return out;
}

namespace {

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

size_t Utf8SafePrefix(absl::string_view s, size_t max) {
  if (s.size() <= max) return s.size();
  size_t cut = max;
  // Back up over continuation bytes to the start of the sequence cut in two.
  while (cut > 0 && IsContinuation(s[cut])) --cut;
  return cut;
}

size_t Utf8Chars(absl::string_view s) {
  size_t n = 0;
  for (char c : s) n += !IsContinuation(c);
  return n;
}

size_t Utf8PrefixBytes(absl::string_view s, size_t chars) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (IsContinuation(s[i])) continue;
    if (n == chars) return i;
    ++n;
  }
  return s.size();
}

size_t Utf8SuffixBytes(absl::string_view s, size_t chars) {
  size_t start = s.size();
  size_t n = 0;
  for (size_t i = s.size(); i > 0; --i) {
    if (IsContinuation(s[i - 1])) continue;
    if (n == chars) break;
    ++n;
    start = i - 1;
  }
  return s.size() - start;
}

std::string Utf8Cut(absl::string_view s, size_t max_chars) {
  const size_t keep = Utf8PrefixBytes(s, max_chars);
  if (keep == s.size()) return std::string(s);
  return absl::StrCat(s.substr(0, keep), "...[", s.size() - keep, " more bytes]");
}

void Utf8StreamSanitizer::Feed(absl::string_view in, std::string* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  size_t i = 0;
  // First complete (or refute) a sequence held from the previous piece.
  while (held_len_ > 0 && i < n) {
    held_[held_len_++] = p[i++];
    size_t len;
    const Step s = Classify(held_, held_len_, &len);
    if (s == Step::kIncomplete) continue;
    if (s == Step::kValid) {
      out->append(reinterpret_cast<const char*>(held_), held_len_);
    } else {
      out->append(kUtf8Replacement.data(), kUtf8Replacement.size());
      invalid_bytes_ += len;
      // The bytes after the invalid subpart came from `in`: read them again.
      i -= held_len_ - len;
    }
    held_len_ = 0;
  }
  size_t run_start = i;
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    const Step s = Classify(p + i, n - i, &len);
    if (s == Step::kValid) {
      i += len;
      continue;
    }
    out->append(in.data() + run_start, i - run_start);
    if (s == Step::kIncomplete) {
      std::memcpy(held_, p + i, n - i);
      held_len_ = n - i;
      return;
    }
    out->append(kUtf8Replacement.data(), kUtf8Replacement.size());
    invalid_bytes_ += len;
    i += len;
    run_start = i;
  }
  out->append(in.data() + run_start, i - run_start);
}

void Utf8StreamSanitizer::Finish(std::string* out) {
  if (held_len_ == 0) return;
  out->append(kUtf8Replacement.data(), kUtf8Replacement.size());
  invalid_bytes_ += held_len_;
  held_len_ = 0;
}

}  // namespace toolexec
