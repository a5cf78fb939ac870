// Gitignore-style globs (tools/workspace/glob.h): the pattern language of
// .gitignore files, find_file and grep_search's glob.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "tools/workspace/glob.h"

namespace toolexec::search {

using fs::GlobPattern;
using fs::GlobSet;
using fs::ParseGitignoreLine;
using fs::ParseUserGlob;
namespace {

// A set from .gitignore lines.
std::unique_ptr<GlobSet> Ignore(std::initializer_list<const char*> lines) {
  std::vector<GlobPattern> patterns;
  for (const char* line : lines) {
    if (auto p = ParseGitignoreLine(line)) patterns.push_back(*p);
  }
  return *GlobSet::Create(std::move(patterns), true);
}

// Whether `path` is ignored (the deciding pattern is not negated).
bool Ignored(const GlobSet& set, const std::string& path, bool is_dir = false) {
  const GlobPattern* p = set.Match(path, is_dir);
  return p != nullptr && !p->negated;
}

bool UserMatch(const std::string& glob, const std::string& path, bool is_dir = false) {
  auto p = ParseUserGlob(glob);
  EXPECT_TRUE(p.ok()) << p.status();
  auto set = *GlobSet::Create({*p}, false);
  return set->Match(path, is_dir) != nullptr;
}

TEST(SearchGlobTest, NameWithoutSlashMatchesAtAnyDepth) {
  auto set = Ignore({"*.o"});
  EXPECT_TRUE(Ignored(*set, "a.o"));
  EXPECT_TRUE(Ignored(*set, "x/y/a.o"));
  EXPECT_FALSE(Ignored(*set, "a.oo"));
  EXPECT_FALSE(Ignored(*set, "a.o/b.c"));  // the name is matched, not a prefix
}

TEST(SearchGlobTest, StarAndQuestionMarkNeverCrossSlash) {
  auto set = Ignore({"a/*.c", "b?d"});
  EXPECT_TRUE(Ignored(*set, "a/x.c"));
  EXPECT_FALSE(Ignored(*set, "a/sub/x.c"));
  EXPECT_TRUE(Ignored(*set, "bad"));
  EXPECT_FALSE(Ignored(*set, "b/d"));
}

TEST(SearchGlobTest, SlashAnchorsToTheBase) {
  auto set = Ignore({"/build", "doc/frotz"});
  EXPECT_TRUE(Ignored(*set, "build", true));
  EXPECT_FALSE(Ignored(*set, "src/build", true));
  EXPECT_TRUE(Ignored(*set, "doc/frotz"));
  EXPECT_FALSE(Ignored(*set, "a/doc/frotz"));
}

TEST(SearchGlobTest, TrailingSlashMatchesDirectoriesOnly) {
  auto set = Ignore({"out/"});
  EXPECT_TRUE(Ignored(*set, "out", true));
  EXPECT_TRUE(Ignored(*set, "x/out", true));
  EXPECT_FALSE(Ignored(*set, "out", false));
}

TEST(SearchGlobTest, DoubleStarForms) {
  auto leading = Ignore({"**/foo"});
  EXPECT_TRUE(Ignored(*leading, "foo"));
  EXPECT_TRUE(Ignored(*leading, "a/b/foo"));
  auto trailing = Ignore({"abc/**"});
  EXPECT_TRUE(Ignored(*trailing, "abc/x"));
  EXPECT_TRUE(Ignored(*trailing, "abc/x/y"));
  EXPECT_FALSE(Ignored(*trailing, "abc", true));
  auto middle = Ignore({"a/**/b"});
  EXPECT_TRUE(Ignored(*middle, "a/b"));
  EXPECT_TRUE(Ignored(*middle, "a/x/b"));
  EXPECT_TRUE(Ignored(*middle, "a/x/y/b"));
  EXPECT_FALSE(Ignored(*middle, "a/xb"));
  auto other = Ignore({"a**z"});  // not a whole component: like '*'
  EXPECT_TRUE(Ignored(*other, "abcz"));
  EXPECT_FALSE(Ignored(*other, "ab/z"));
}

TEST(SearchGlobTest, NegationAndLastMatchWins) {
  auto set = Ignore({"*.log", "!keep.log"});
  EXPECT_TRUE(Ignored(*set, "a.log"));
  EXPECT_FALSE(Ignored(*set, "keep.log"));
  ASSERT_NE(set->Match("keep.log", false), nullptr);
  EXPECT_TRUE(set->Match("keep.log", false)->negated);
  auto reversed = Ignore({"!keep.log", "*.log"});
  EXPECT_TRUE(Ignored(*reversed, "keep.log"));
}

TEST(SearchGlobTest, ClassesAndEscapes) {
  auto set = Ignore({"[abc].txt", "[!0-9]x", "\\#hash", "\\!bang", "lit\\*"});
  EXPECT_TRUE(Ignored(*set, "b.txt"));
  EXPECT_FALSE(Ignored(*set, "d.txt"));
  EXPECT_TRUE(Ignored(*set, "ax"));
  EXPECT_FALSE(Ignored(*set, "1x"));
  EXPECT_TRUE(Ignored(*set, "#hash"));
  EXPECT_TRUE(Ignored(*set, "!bang"));
  EXPECT_TRUE(Ignored(*set, "lit*"));
  EXPECT_FALSE(Ignored(*set, "litx"));
}

TEST(SearchGlobTest, CommentsBlanksAndTrailingSpaces) {
  EXPECT_FALSE(ParseGitignoreLine("# comment").has_value());
  EXPECT_FALSE(ParseGitignoreLine("").has_value());
  EXPECT_FALSE(ParseGitignoreLine("   ").has_value());
  auto p = ParseGitignoreLine("name   ");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->source, "name");
  auto escaped = ParseGitignoreLine("name\\ ");
  ASSERT_TRUE(escaped.has_value());
  auto set = *GlobSet::Create({*escaped}, true);
  EXPECT_NE(set->Match("name ", false), nullptr);
  auto crlf = ParseGitignoreLine("x.tmp\r");
  ASSERT_TRUE(crlf.has_value());
  EXPECT_EQ(crlf->source, "x.tmp");
}

TEST(SearchGlobTest, BracesOnlyInUserGlobs) {
  EXPECT_TRUE(UserMatch("*.{h,cc}", "a/b.cc"));
  EXPECT_TRUE(UserMatch("*.{h,cc}", "b.h"));
  EXPECT_FALSE(UserMatch("*.{h,cc}", "b.c"));
  EXPECT_TRUE(UserMatch("src/{a,b/c}/*.py", "src/b/c/x.py"));
  auto set = Ignore({"*.{h,cc}"});
  EXPECT_TRUE(Ignored(*set, "x.{h,cc}"));  // gitignore has no braces
  EXPECT_FALSE(Ignored(*set, "x.h"));
}

TEST(SearchGlobTest, UserGlobs) {
  EXPECT_TRUE(UserMatch("**/*.cc", "a.cc"));
  EXPECT_TRUE(UserMatch("**/*.cc", "x/y/a.cc"));
  EXPECT_TRUE(UserMatch("src/*.h", "src/a.h"));
  EXPECT_FALSE(UserMatch("src/*.h", "lib/src/a.h"));
  EXPECT_TRUE(UserMatch("./src/*.h", "src/a.h"));
  EXPECT_TRUE(UserMatch("*.md", "docs/README.md"));
  EXPECT_TRUE(UserMatch("Makefile", "sub/Makefile"));
  EXPECT_TRUE(UserMatch("build/", "x/build", true));
  EXPECT_FALSE(UserMatch("build/", "x/build", false));
  auto neg = ParseUserGlob("!*.md");
  ASSERT_TRUE(neg.ok());
  EXPECT_TRUE(neg->negated);
  EXPECT_FALSE(ParseUserGlob("").ok());
  EXPECT_FALSE(ParseUserGlob("!").ok());
}

TEST(SearchGlobTest, MatchesNonUtf8Names) {
  EXPECT_TRUE(UserMatch("*.txt", "caf\xE9.txt"));
  EXPECT_TRUE(UserMatch("caf\xC3\xA9*", "caf\xC3\xA9-menu"));
}

TEST(SearchGlobTest, HasPositive) {
  EXPECT_TRUE((*GlobSet::Create({*ParseUserGlob("*.cc")}, false))->has_positive());
  EXPECT_FALSE((*GlobSet::Create({*ParseUserGlob("!*.cc")}, false))->has_positive());
}

TEST(SearchGlobTest, PosixClassesAsGitReadsThem) {
  // git ignores only 1.txt: the class ends at its own "]", not at the first one.
  auto digit = Ignore({"[[:digit:]].txt"});
  EXPECT_TRUE(Ignored(*digit, "1.txt"));
  EXPECT_FALSE(Ignored(*digit, "a.txt"));
  EXPECT_FALSE(Ignored(*digit, "p].txt"));
  EXPECT_TRUE(UserMatch("*[[:digit:]]*", "a2.c"));
  EXPECT_FALSE(UserMatch("*[[:digit:]]*", "abc"));
  struct Case {
    const char* cls;
    const char* in;
    const char* out;
  };
  for (const Case& c : std::vector<Case>{{"alnum", "a0Z", "-_ "},
                                         {"alpha", "azAZ", "0_"},
                                         {"blank", " \t", "\na"},
                                         {"cntrl", "\x01\x1f\x7f", " a"},
                                         {"digit", "09", "a"},
                                         {"graph", "!~a", " \x7f"},
                                         {"lower", "az", "AZ0"},
                                         {"print", " ~a", "\t\x7f"},
                                         {"punct", "!-@[`{~", "a0 "},
                                         {"space", " \t\n\r", "\v\fa"},
                                         {"upper", "AZ", "az"},
                                         {"xdigit", "09afAF", "gG"}}) {
    const std::string glob = std::string("x[[:") + c.cls + ":]]";
    for (const char* ch = c.in; *ch != '\0'; ++ch) {
      EXPECT_TRUE(UserMatch(glob, std::string("x") + *ch)) << glob << " " << int{*ch};
    }
    for (const char* ch = c.out; *ch != '\0'; ++ch) {
      EXPECT_FALSE(UserMatch(glob, std::string("x") + *ch)) << glob << " " << int{*ch};
    }
  }
}

TEST(SearchGlobTest, BracketNegationRangesAndLeadingBracket) {
  EXPECT_TRUE(UserMatch("x[!a-c]", "xd"));
  EXPECT_FALSE(UserMatch("x[!a-c]", "xb"));
  EXPECT_TRUE(UserMatch("x[^[:alpha:]]", "x1"));
  EXPECT_FALSE(UserMatch("x[^[:alpha:]]", "xq"));
  EXPECT_TRUE(UserMatch("x[]a]", "x]"));   // ']' first is a member
  EXPECT_TRUE(UserMatch("x[!]a]", "xb"));  // also after '!'
  EXPECT_FALSE(UserMatch("x[!]a]", "x]"));
  EXPECT_TRUE(UserMatch("x[a-]", "x-"));     // '-' last is a member
  EXPECT_TRUE(UserMatch("x[[:digit:]a]", "xa"));
  EXPECT_TRUE(UserMatch("x[\\]]", "x]"));    // escaped ']'
  EXPECT_TRUE(UserMatch("x[[:]", "x:"));     // "[:" without ":]" is two members
  EXPECT_TRUE(UserMatch("x[z-a]", "xz"));    // git: a reversed range is only its start
  EXPECT_FALSE(UserMatch("x[z-a]", "xb"));
  EXPECT_FALSE(UserMatch("x[!a]", "x/"));    // not even a negated class matches '/'
  EXPECT_FALSE(UserMatch("x?", "x/"));
}

TEST(SearchGlobTest, PatternsGitCannotMatchMatchNothing) {
  auto set = Ignore({"foo[", "bar\\", "[[:bogus:]]x", "a[/]b", "c[[:digit:]"});
  EXPECT_FALSE(Ignored(*set, "foo["));
  EXPECT_FALSE(Ignored(*set, "bar\\"));
  EXPECT_FALSE(Ignored(*set, "[[:bogus:]]x"));
  EXPECT_FALSE(Ignored(*set, "bx"));
  EXPECT_FALSE(Ignored(*set, "a/b"));
  EXPECT_FALSE(Ignored(*set, "c1"));
  EXPECT_FALSE(Ignored(*set, "c[[:digit:]"));
  // As the model's glob, each is an error that says why.
  for (const char* bad : {"foo[", "bar\\", "x[[:bogus:]]", "a[/]b"}) {
    auto p = ParseUserGlob(bad);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(UserMatch("a[/x]b", "a/b"));
  EXPECT_TRUE(UserMatch("a[/x]b", "axb"));
}

TEST(SearchGlobTest, AnySlashAnchorsAsInGit) {
  auto set = Ignore({"a\\/b", "c[/x]d"});
  EXPECT_TRUE(Ignored(*set, "a/b"));
  EXPECT_FALSE(Ignored(*set, "x/a/b"));
  EXPECT_TRUE(Ignored(*set, "cxd"));
  EXPECT_FALSE(Ignored(*set, "y/cxd"));  // the '/' in the bracket anchors it
  // git matches an anchored pattern's literal prefix apart, so a "**" right
  // after it spans directories.
  auto after_prefix = Ignore({"a**/*", "d/e**"});
  EXPECT_TRUE(Ignored(*after_prefix, "a"));
  EXPECT_TRUE(Ignored(*after_prefix, "ab/c/d"));
  EXPECT_TRUE(Ignored(*after_prefix, "d/ex/y"));
  EXPECT_FALSE(Ignored(*after_prefix, "d/x"));
  auto any_depth = Ignore({"**/x.c", "/**/y.c"});
  EXPECT_TRUE(Ignored(*any_depth, "x.c"));
  EXPECT_TRUE(Ignored(*any_depth, "a/b/x.c"));
  EXPECT_TRUE(Ignored(*any_depth, "a/y.c"));
}

}  // namespace
}  // namespace toolexec::search
