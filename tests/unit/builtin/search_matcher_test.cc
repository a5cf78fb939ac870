// The literal finder and the line matcher (tools/search/literal.h,
// matcher.h): each strategy finds exactly the lines RE2 would, line by line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "re2/re2.h"
#include "tools/search/literal.h"
#include "tools/search/matcher.h"

namespace toolexec::search {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Every matching line of `text`, by FindLine.
std::vector<std::string> Lines(const LineMatcher& m, absl::string_view text) {
  std::vector<std::string> out;
  size_t from = 0;
  size_t s = 0;
  size_t e = 0;
  while (m.FindLine(text, from, &s, &e)) {
    out.emplace_back(text.substr(s, e - s));
    from = e + 1;
  }
  return out;
}

std::unique_ptr<LineMatcher> Regex(const std::string& pattern, bool ci = false) {
  auto m = LineMatcher::Create(MatcherOptions{pattern, false, ci});
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

std::unique_ptr<LineMatcher> Literal(const std::string& text, bool ci = false) {
  auto m = LineMatcher::Create(MatcherOptions{text, true, ci});
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

TEST(SearchLiteralTest, FindsExact) {
  LiteralFinder f("PATH_MAX", false);
  const std::string text = "a PATH_MAX b path_max PATH_MAX";
  EXPECT_EQ(f.Find(text), 2u);
  EXPECT_EQ(f.Find(text, 3), 22u);
  EXPECT_EQ(f.Find(text, 23), absl::string_view::npos);
  EXPECT_EQ(f.Find("PATH_MA"), absl::string_view::npos);
}

TEST(SearchLiteralTest, FoldsAsciiCase) {
  LiteralFinder f("Hello", true);
  EXPECT_EQ(f.Find("say hELLo"), 4u);
  EXPECT_EQ(f.Find("HELLO"), 0u);
  EXPECT_EQ(f.Find("hell o"), absl::string_view::npos);
}

TEST(SearchLiteralTest, FoldsKelvinAndLongS) {
  // RE2's (?i)k matches U+212A and (?i)s matches U+017F: the prefilter must too.
  LiteralFinder f("kiss", true);
  EXPECT_EQ(f.Find("x \xE2\x84\xAAiss"), 2u);
  EXPECT_EQ(f.Find("KI\xC5\xBF\xC5\xBF"), 0u);
  EXPECT_FALSE(LiteralFinder::CanFold("ssk"));  // no byte to scan for
  EXPECT_FALSE(LiteralFinder::CanFold("caf\xC3\xA9"));
  EXPECT_TRUE(LiteralFinder::CanFold("kiss"));
}

TEST(SearchLiteralTest, Memchr2FindsEitherByteAtEveryOffset) {
  std::string text(200, 'x');
  for (size_t i = 0; i < text.size(); ++i) {
    std::string t = text;
    t[i] = (i % 2 == 0) ? 'a' : 'b';
    EXPECT_EQ(Memchr2(t.data(), t.size(), 'a', 'b'), t.data() + i) << i;
  }
  EXPECT_EQ(Memchr2(text.data(), text.size(), 'a', 'b'), nullptr);
}

TEST(SearchMatcherTest, PicksAStrategy) {
  EXPECT_EQ(Literal("a.b")->strategy(), LineMatcher::Strategy::kLiteral);
  EXPECT_EQ(Regex("PATH_MAX")->strategy(), LineMatcher::Strategy::kLiteral);
  EXPECT_EQ(Regex("foo\\.bar")->strategy(), LineMatcher::Strategy::kLiteral);
  auto required = Regex("\\bstd::[a-z_]+_ptr<");
  EXPECT_EQ(required->strategy(), LineMatcher::Strategy::kRequiredLiteral);
  EXPECT_THAT(required->prefilter(), ::testing::AnyOf("std::", "_ptr<"));
  EXPECT_EQ(Regex("foo|bar")->strategy(), LineMatcher::Strategy::kRegex);
  EXPECT_EQ(Regex("\\w+")->strategy(), LineMatcher::Strategy::kRegex);
  // Non-ASCII case folding is left to RE2.
  EXPECT_EQ(Literal("caf\xC3\xA9", true)->strategy(), LineMatcher::Strategy::kRegex);
}

TEST(SearchMatcherTest, PlainLiteralDetection) {
  std::string lit;
  EXPECT_TRUE(IsPlainLiteral("a-b_c d", &lit));
  EXPECT_EQ(lit, "a-b_c d");
  EXPECT_TRUE(IsPlainLiteral("a\\.b\\(", &lit));
  EXPECT_EQ(lit, "a.b(");
  EXPECT_FALSE(IsPlainLiteral("a.b", &lit));
  EXPECT_FALSE(IsPlainLiteral("\\d", &lit));
  EXPECT_FALSE(IsPlainLiteral("x\\", &lit));
}

TEST(SearchMatcherTest, EveryStrategyFindsWholeLines) {
  const std::string text = "int a;\nstd::unique_ptr<T> p;\nfoo bar\n  std::shared_ptr<U> q\nend";
  EXPECT_THAT(Lines(*Regex("\\bstd::[a-z_]+_ptr<"), text),
              ElementsAre("std::unique_ptr<T> p;", "  std::shared_ptr<U> q"));
  EXPECT_THAT(Lines(*Regex("foo|end"), text), ElementsAre("foo bar", "end"));
  EXPECT_THAT(Lines(*Literal("ptr"), text),
              ElementsAre("std::unique_ptr<T> p;", "  std::shared_ptr<U> q"));
  EXPECT_THAT(Lines(*Literal("END", true), text), ElementsAre("end"));
  EXPECT_THAT(Lines(*Literal("END"), text), IsEmpty());
}

TEST(SearchMatcherTest, MatchesNeverSpanLines) {
  const std::string text = "a\nb\na b\n";
  EXPECT_THAT(Lines(*Regex("a\\sb"), text), ElementsAre("a b"));
  EXPECT_THAT(Lines(*Regex("a[^x]b"), text), ElementsAre("a b"));
  EXPECT_THAT(Lines(*Regex("a\\nb"), text), IsEmpty());
  EXPECT_THAT(Lines(*Literal("a\nb"), text), IsEmpty());
}

TEST(SearchMatcherTest, AnchorsAreLineAnchors) {
  const std::string text = "foo x\nx foo\nfoo\n";
  EXPECT_THAT(Lines(*Regex("^foo"), text), ElementsAre("foo x", "foo"));
  EXPECT_THAT(Lines(*Regex("foo$"), text), ElementsAre("x foo", "foo"));
  EXPECT_THAT(Lines(*Regex("^foo$"), text), ElementsAre("foo"));
  // With a required literal, the line is matched on its own: same anchors.
  EXPECT_THAT(Lines(*Regex("^foo\\w*$"), text), ElementsAre("foo"));
}

TEST(SearchMatcherTest, EmptyMatchesAndTheLastLine) {
  EXPECT_THAT(Lines(*Regex(""), "a\nb\n"), ElementsAre("a", "b"));
  EXPECT_THAT(Lines(*Regex(""), "a\nb"), ElementsAre("a", "b"));
  EXPECT_THAT(Lines(*Regex("^$"), "a\n\nb\n"), ElementsAre(""));
  EXPECT_THAT(Lines(*Regex("x*"), ""), IsEmpty());
}

TEST(SearchMatcherTest, AnyLineAgreesWithFindLine) {
  for (const char* pattern : {"^$", "x*", "[A-Z]{3}", "b$", "foo", "\\bfoo\\w+"}) {
    auto m = Regex(pattern);
    for (const char* text : {"", "a\n", "a\n\nb", "ABC\n", "ab\nb", "foobar\n", "x"}) {
      size_t s = 0;
      size_t e = 0;
      EXPECT_EQ(m->AnyLine(text, 0), m->FindLine(text, 0, &s, &e)) << pattern << " on " << text;
    }
  }
  EXPECT_FALSE(Regex("^$")->AnyLine("a\n", 0));  // no line after the last '\n'
  EXPECT_TRUE(Regex("^$")->AnyLine("a\n\nb", 0));
}

TEST(SearchMatcherTest, CaseInsensitive) {
  const std::string text =
      "Hello World\nhello\nHELLO\n\xE2\x84\xAA"
      "elvin\n";
  EXPECT_THAT(Lines(*Regex("hello", true), text), ElementsAre("Hello World", "hello", "HELLO"));
  EXPECT_THAT(Lines(*Regex("hel+o\\b", true), text), ElementsAre("Hello World", "hello", "HELLO"));
  // Unicode folding as RE2 does it, even through the literal prefilter.
  EXPECT_THAT(Lines(*Regex("kelvin", true), text), ElementsAre("\xE2\x84\xAA"
                                                               "elvin"));
  EXPECT_THAT(Lines(*Regex("k[e]lvin", true), text), ElementsAre("\xE2\x84\xAA"
                                                                 "elvin"));
  EXPECT_THAT(Lines(*Regex("(?i)hello"), text), ElementsAre("Hello World", "hello", "HELLO"));
}

TEST(SearchMatcherTest, InvalidRegexNamesTheProblem) {
  auto m = LineMatcher::Create(MatcherOptions{"foo(", false, false});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), ::testing::HasSubstr("missing )"));
  EXPECT_THAT(m.status().message(), ::testing::HasSubstr("foo("));
  EXPECT_FALSE(LineMatcher::Create(MatcherOptions{"a{2,1}", false, false}).ok());
  EXPECT_FALSE(LineMatcher::Create(MatcherOptions{"(?<=x)y", false, false}).ok());
}

TEST(SearchMatcherTest, CloneBehavesTheSame) {
  auto m = Regex("b[a-z]+");
  auto c = m->Clone();
  EXPECT_EQ(Lines(*m, "abc\nxyz\nbz\n"), Lines(*c, "abc\nxyz\nbz\n"));
}

// Differential check: on generated text, every strategy agrees with running
// RE2 on each line separately.
TEST(SearchMatcherTest, AgreesWithLineByLineRe2) {
  std::string text;
  const char* words[] = {"foo", "Bar", "std::", "x_ptr<", "  ", "\t", "KELVIN", "ſ", "q", "\r"};
  uint32_t seed = 12345;
  for (int i = 0; i < 4000; ++i) {
    seed = seed * 1103515245 + 12345;
    if ((seed >> 16) % 7 == 0) {
      text.push_back('\n');
    } else {
      text += words[(seed >> 8) % 10];
    }
  }
  for (const char* pattern : {"foo", "std::\\w+_ptr<", "(?i)bar\\s", "^foo", "q$", "foo|Bar",
                              "[a-z]{3}", "S", "kelvin"}) {
    for (bool ci : {false, true}) {
      auto m = Regex(pattern, ci);
      RE2::Options o;
      o.set_case_sensitive(!ci);
      RE2 re(pattern, o);
      std::vector<std::string> expected;
      size_t start = 0;
      while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        absl::string_view line(text.data() + start, end - start);
        if (RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), re)) {
          expected.emplace_back(line);
        }
        start = end + 1;
      }
      EXPECT_EQ(Lines(*m, text), expected) << pattern << " ci=" << ci;
    }
  }
}

}  // namespace
}  // namespace toolexec::search
