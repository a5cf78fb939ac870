// The bounded, UTF-8-clean output capture of run_command.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tools/process/output_capture.h"
#include "tools/runtime/utf8.h"

namespace toolexec::command {
namespace {

std::string Sanitize(const std::vector<std::string>& reads, uint64_t* invalid = nullptr) {
  Utf8StreamSanitizer s;
  std::string out;
  for (const auto& r : reads) s.Feed(r, &out);
  s.Finish(&out);
  if (invalid) *invalid = s.invalid_bytes();
  return out;
}

TEST(CommandUtf8, SplitSequencesAreJoined) {
  const std::string euro = "\xE2\x82\xAC";
  const std::string emoji = "\xF0\x9F\x98\x80";
  for (size_t cut = 0; cut <= euro.size(); ++cut) {
    EXPECT_EQ(Sanitize({"a" + euro.substr(0, cut), euro.substr(cut) + "b"}), "a" + euro + "b");
  }
  // One byte per read.
  std::vector<std::string> bytes;
  for (char c : "x" + emoji + euro + "y") bytes.push_back(std::string(1, c));
  uint64_t invalid = 99;
  EXPECT_EQ(Sanitize(bytes, &invalid), "x" + emoji + euro + "y");
  EXPECT_EQ(invalid, 0u);
}

TEST(CommandUtf8, InvalidBytesAreReplaced) {
  uint64_t invalid;
  EXPECT_EQ(Sanitize({"a\xFF"
                      "b"},
                     &invalid),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(invalid, 1u);
  // A truncated sequence followed by ASCII: one U+FFFD, and the ASCII kept.
  EXPECT_EQ(Sanitize({"\xE2\x82", "A"}, &invalid),
            "\xEF\xBF\xBD"
            "A");
  EXPECT_EQ(invalid, 2u);
  // Overlong, surrogate, above U+10FFFF.
  EXPECT_EQ(Sanitize({"\xC0\xAF"}), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(Sanitize({"\xED\xA0\x80"}).substr(0, 3), "\xEF\xBF\xBD");
  EXPECT_EQ(Sanitize({"\xF4\x90\x80\x80"}).substr(0, 3), "\xEF\xBF\xBD");
  // Cut off at the end of the stream.
  EXPECT_EQ(Sanitize({"ok\xF0\x9F"}, &invalid), "ok\xEF\xBF\xBD");
  EXPECT_EQ(invalid, 2u);
}

TEST(CommandHeadTail, KeepsEverythingUnderTheLimit) {
  HeadTail h(8);
  h.Append("abc");
  h.Append("defgh");
  h.Append("ijklmnop");
  EXPECT_EQ(h.Render(), "abcdefghijklmnop");
  EXPECT_FALSE(h.truncated());
}

TEST(CommandHeadTail, KeepsHeadAndTailWithAMarker) {
  HeadTail h(4);
  for (int i = 0; i < 100; ++i) h.Append(absl::StrCat(i % 10));
  EXPECT_EQ(h.Render(), absl::StrCat("0123", OmittedMarker(92), "6789"));
  EXPECT_TRUE(h.truncated());
  EXPECT_EQ(h.total_bytes(), 100u);

  HeadTail big(4);
  big.Append(std::string(1000, 'x') + "TAIL");
  EXPECT_EQ(big.Render(), absl::StrCat("xxxx", OmittedMarker(996), "TAIL"));
}

TEST(CommandHeadTail, NeverSplitsACharacter) {
  const std::string euro = "\xE2\x82\xAC";
  HeadTail h(4);
  h.Append("a" + euro + euro + euro + euro + "z");  // 1 + 12 + 1 bytes
  // Head: "a€" (exactly 4 bytes); tail: "€z".
  std::string r = h.Render();
  EXPECT_EQ(r.substr(0, 4), "a" + euro);
  EXPECT_EQ(r.substr(r.size() - 4), euro + "z");
  EXPECT_NE(r.find(OmittedMarker(6)), std::string::npos) << r;

  // A head that cannot take a whole character stops before it, and a tail
  // that starts inside one drops the partial bytes (counted as omitted).
  HeadTail odd(5);
  odd.Append("ab" + euro + euro + "xy" + euro + "z");  // 2+3+3+2+3+1 = 14 bytes
  std::string o = odd.Render();
  EXPECT_EQ(o.substr(0, 5), "ab" + euro);
  // Last 5 bytes: "y" + euro + "z" -> whole; 14 - 5 - 5 = 4 omitted.
  EXPECT_EQ(o, "ab" + euro + OmittedMarker(4) + "y" + euro + "z");
  HeadTail cut(3);
  cut.Append("abc" + std::string(10, 'x') + euro + "z");  // tail ring: "\x82\xAC" "z"
  EXPECT_EQ(cut.Render(), "abc" + OmittedMarker(13) + "z");
}

TEST(CommandBackgroundLog, ReadsOnlyWhatIsNewAndStaysBounded) {
  BackgroundLog log(10);
  log.Append(false, "abc");
  log.Append(true, "ERR");
  auto r1 = log.TakeUnread();
  EXPECT_EQ(r1.stdout_text, "abc");
  EXPECT_EQ(r1.stderr_text, "ERR");
  EXPECT_EQ(r1.combined, "abcERR");
  EXPECT_EQ(r1.first_seq, 1u);
  EXPECT_EQ(r1.last_seq, 2u);
  auto r2 = log.TakeUnread();
  EXPECT_EQ(r2.combined, "");
  EXPECT_EQ(r2.first_seq, 0u);
  for (int i = 0; i < 10; ++i) log.Append(false, "12345");
  auto r3 = log.TakeUnread();
  EXPECT_EQ(r3.stdout_text, "1234512345");
  EXPECT_EQ(r3.omitted_bytes, 40u);
  EXPECT_EQ(r3.first_seq, 11u);
  EXPECT_EQ(r3.last_seq, 12u);
}

}  // namespace
}  // namespace toolexec::command
