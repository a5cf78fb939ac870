// Fast literal substring search, the prefilter of the grep engine.
//
// A LiteralFinder looks for one needle in a buffer by scanning for its rarest
// byte with memchr (or a two-byte SSE2 variant for either case of a letter)
// and verifying around each hit, as ripgrep and the memchr crate do. It runs
// at memory speed on source code, far ahead of a regex engine.
//
// Two modes:
//  - exact: byte-for-byte equality.
//  - ascii_fold: ASCII letters match either case. Because RE2's case folding
//    also maps 'k' to U+212A (KELVIN SIGN) and 's' to U+017F (LONG S), a
//    folding finder accepts those UTF-8 sequences for 'k' and 's' too, so it
//    is a sound prefilter for a case-insensitive regex (never misses a line the
//    regex would match). The needle of a folding finder must be ASCII.
//
// Thread safety: immutable after construction; Find may run concurrently.
#ifndef TOOLEXEC_TOOLS_SEARCH_LITERAL_H_
#define TOOLEXEC_TOOLS_SEARCH_LITERAL_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace toolexec::search {

// How common a byte is in source code and text: 0 = rarest, 255 = commonest.
int ByteFrequencyRank(unsigned char byte);

// First position in [data, data+size) equal to a or b; nullptr if none.
const char* Memchr2(const char* data, size_t size, unsigned char a, unsigned char b);

class LiteralFinder final {
 public:
  // `needle` must be non-empty; with ascii_fold it must be ASCII (see
  // CanFold).
  LiteralFinder(absl::string_view needle, bool ascii_fold);

  // Whether `needle` can be searched with ascii_fold: non-empty, ASCII, and
  // not made only of 'k'/'s' letters (whose non-ASCII folds defeat the
  // rare-byte scan).
  static bool CanFold(absl::string_view needle);

  // The first occurrence at or after `from` in `text`; npos if none. Under
  // ascii_fold an occurrence may be longer than the needle (U+212A is three
  // bytes); the returned position is where it starts.
  size_t Find(absl::string_view text, size_t from = 0) const;

  const std::string& needle() const { return needle_; }
  bool ascii_fold() const { return fold_; }
  // Rank of the byte scanned for (lower = fewer false hits).
  int rarity() const { return ByteFrequencyRank(static_cast<unsigned char>(needle_[rare_index_])); }

 private:
  // Whether the needle occurs exactly at text[pos...].
  bool MatchesAt(absl::string_view text, size_t pos) const;

  std::string needle_;  // lower-cased when fold_
  bool fold_;
  size_t rare_index_ = 0;  // the byte scanned for; never 'k'/'s' when fold_
};

}  // namespace toolexec::search

#endif  // TOOLEXEC_TOOLS_SEARCH_LITERAL_H_
