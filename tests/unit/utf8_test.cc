// The one rule for invalid UTF-8 on the wire: one U+FFFD per maximal subpart.
#include "tools/runtime/utf8.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace toolexec {
namespace {

const std::string R(kUtf8Replacement);

// The Unicode Standard's table 3-8 and the WHATWG decoder's results.
TEST(Utf8Test, EachMaximalSubpartBecomesOneReplacement) {
  struct Case {
    std::string in, out;
  } cases[] = {
      {"plain", "plain"},
      {"\xC3\xA9t\xC3\xA9", "\xC3\xA9t\xC3\xA9"},  // valid 2-byte
      {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},    // valid 4-byte
      {"a\xE2\x82z", "a" + R + "z"},               // truncated 3-byte: one
      {"\xF0\x9F\x98z", R + "z"},                  // truncated 4-byte: one
      {"\xE2\x82", R},                             // truncated at the end: one
      {"\xC0\xAF", R + R},                         // C0 starts nothing; AF alone
      {"\xED\xA0\x80", R + R + R},                 // a surrogate: ED then 2 lone
      {"\xF4\x90\x80\x80", R + R + R + R},         // past U+10FFFF
      {"\xE0\x80\xAF", R + R + R},                 // overlong
      {"\x80\x80", R + R},                         // lone continuation bytes
      {"\xFF", R},
      {"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64",  // Unicode's own example
       "a" + R + R + R + "b" + R + "c" + R + R + "d"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(SanitizeUtf8(c.in), c.out) << testing::PrintToString(c.in);
    EXPECT_EQ(IsValidUtf8(c.in), c.in == c.out) << testing::PrintToString(c.in);
    // Fed in every split into two pieces, the stream gives the same text.
    for (size_t cut = 0; cut <= c.in.size(); ++cut) {
      Utf8StreamSanitizer stream;
      std::string out;
      stream.Feed(c.in.substr(0, cut), &out);
      stream.Feed(c.in.substr(cut), &out);
      stream.Finish(&out);
      EXPECT_EQ(out, c.out) << testing::PrintToString(c.in) << " cut at " << cut;
    }
  }
}

TEST(Utf8Test, AppendSaysWhetherItReplaced) {
  std::string out = ">";
  EXPECT_FALSE(AppendSanitizedUtf8(&out, "ok \xE2\x82\xAC"));
  EXPECT_TRUE(AppendSanitizedUtf8(&out, "a\xFF|\xE2\x82"));
  EXPECT_EQ(out, ">ok \xE2\x82\xAC" + ("a" + R) + "|" + R);
}

TEST(Utf8Test, AppendWithinStopsBeforeTheCapAndSaysSo) {
  std::string out;
  EXPECT_FALSE(AppendSanitizedUtf8Within(&out, "ab\xC3\xA9!", 3));
  EXPECT_EQ(out, "ab");  // the 2-byte character does not fit whole
  out.clear();
  EXPECT_TRUE(AppendSanitizedUtf8Within(&out, "a\xFF", 4));
  EXPECT_EQ(out, "a" + R);
  out.clear();
  EXPECT_FALSE(AppendSanitizedUtf8Within(&out, "a\xFF", 3));
  EXPECT_EQ(out, "a");
  out = "xy";
  EXPECT_TRUE(AppendSanitizedUtf8Within(&out, "z", 3));
  EXPECT_EQ(out, "xyz");
}

TEST(Utf8Test, SafePrefixNeverCutsACharacter) {
  const std::string s = "a\xE2\x82\xAC";  // "a€"
  EXPECT_EQ(Utf8SafePrefix(s, 10), 4u);
  EXPECT_EQ(Utf8SafePrefix(s, 4), 4u);
  EXPECT_EQ(Utf8SafePrefix(s, 3), 1u);
  EXPECT_EQ(Utf8SafePrefix(s, 2), 1u);
  EXPECT_EQ(Utf8SafePrefix(s, 1), 1u);
}

}  // namespace
}  // namespace toolexec
