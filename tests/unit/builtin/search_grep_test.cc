// The grep engine (tools/search/grep.h): modes, context lines, caps,
// deterministic order, binary files, block boundaries of large files,
// cancellation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tests/unit/builtin/search_test_util.h"
#include "tools/search/grep.h"

namespace toolexec::search {

using fs::OpenConfined;
namespace {

using search_testing::TempWorkspace;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

GrepResult RunGrep(const TempWorkspace& ws, GrepRequest req, const std::string& path = ".") {
  auto start = OpenConfined(testing::Roots({ws.path()}), path, "path");
  EXPECT_TRUE(start.ok()) << start.status();
  auto r = Grep(*start, req);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : GrepResult{};
}

GrepRequest Req(const std::string& pattern, OutputMode mode = OutputMode::kContent) {
  GrepRequest r;
  r.matcher.pattern = pattern;
  r.mode = mode;
  return r;
}

std::vector<std::string> Paths(const GrepResult& r) {
  std::vector<std::string> out;
  for (const GrepFile& f : r.files) out.push_back(f.path);
  return out;
}

// "path:line:text" / "path-line-text" of every stored line.
std::vector<std::string> Lines(const GrepResult& r) {
  std::vector<std::string> out;
  for (const GrepFile& f : r.files) {
    for (const GrepLine& l : f.lines) {
      const char* sep = l.is_context ? "-" : ":";
      out.push_back(absl::StrCat(f.path, sep, l.number, sep, l.text));
    }
  }
  return out;
}

std::string Numbered(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) absl::StrAppend(&s, "line ", i, "\n");
  return s;
}

TEST(SearchGrepTest, FilesWithMatchesSortedByPath) {
  TempWorkspace ws;
  ws.Write("b.txt", "needle\n");
  ws.Write("a/z.txt", "needle\n");
  ws.Write("a-b.txt", "needle\n");
  ws.Write("a.txt", "hay\n");
  ws.Write("c/d/e.txt", "x needle x\nneedle\n");
  GrepResult r = RunGrep(ws, Req("needle", OutputMode::kFilesWithMatches));
  // '/' sorts before every other byte: a/z.txt before a-b.txt.
  EXPECT_THAT(Paths(r), ElementsAre("a/z.txt", "a-b.txt", "b.txt", "c/d/e.txt"));
  EXPECT_EQ(r.total_files, 4u);
  EXPECT_FALSE(r.truncated);
}

TEST(SearchGrepTest, ContentAndCount) {
  TempWorkspace ws;
  ws.Write("f.txt", "one foo\ntwo\nthree foo foo\n");
  EXPECT_THAT(Lines(RunGrep(ws, Req("foo"))),
              ElementsAre("f.txt:1:one foo", "f.txt:3:three foo foo"));
  GrepResult count = RunGrep(ws, Req("foo", OutputMode::kCount));
  ASSERT_EQ(count.files.size(), 1u);
  EXPECT_EQ(count.files[0].matches, 2u);  // lines, as rg -c
  EXPECT_EQ(count.total_matches, 2u);
}

TEST(SearchGrepTest, ContextLinesMergeLikeRipgrep) {
  TempWorkspace ws;
  ws.Write("f.txt", Numbered(1, 12));
  GrepRequest req = Req("line (3|5|11)$");
  req.context_lines = 1;
  EXPECT_THAT(
      Lines(RunGrep(ws, req)),
      ElementsAre("f.txt-2-line 2", "f.txt:3:line 3", "f.txt-4-line 4", "f.txt:5:line 5",
                  "f.txt-6-line 6", "f.txt-10-line 10", "f.txt:11:line 11", "f.txt-12-line 12"));
  req = Req("line 1$");
  req.context_lines = 3;
  EXPECT_THAT(Lines(RunGrep(ws, req)),
              ElementsAre("f.txt:1:line 1", "f.txt-2-line 2", "f.txt-3-line 3", "f.txt-4-line 4"));
}

TEST(SearchGrepTest, ContextAtTheEndOfAFileWithoutNewline) {
  TempWorkspace ws;
  ws.Write("f.txt", "a\nmatch\nb\nc");
  GrepRequest req = Req("match");
  req.context_lines = 5;
  EXPECT_THAT(Lines(RunGrep(ws, req)),
              ElementsAre("f.txt-1-a", "f.txt:2:match", "f.txt-3-b", "f.txt-4-c"));
}

TEST(SearchGrepTest, LargeFileAcrossBlocks) {
  // Several 1 MiB blocks: line numbers, context and counts stay exact across
  // block boundaries.
  TempWorkspace ws;
  std::string text;
  const int kLines = 300000;
  for (int i = 1; i <= kLines; ++i) {
    absl::StrAppend(&text, i % 50000 == 0 ? "MARK " : "filler ", i, "\n");
  }
  ws.Write("big.txt", text);
  GrepRequest req = Req("MARK");
  req.context_lines = 2;
  GrepResult r = RunGrep(ws, req);
  std::vector<std::string> lines = Lines(r);
  ASSERT_EQ(lines.size(), 6u * 5 - 2);  // the last mark is the last line
  EXPECT_EQ(lines[0], "big.txt-49998-filler 49998");
  EXPECT_EQ(lines[2], "big.txt:50000:MARK 50000");
  EXPECT_EQ(lines[4], "big.txt-50002-filler 50002");
  EXPECT_EQ(lines.back(), "big.txt:300000:MARK 300000");
  EXPECT_EQ(r.total_matches, 6u);
  GrepResult count = RunGrep(ws, Req("filler", OutputMode::kCount));
  EXPECT_EQ(count.files[0].matches, static_cast<uint64_t>(kLines - 6));
  // Every line is found once, including those that straddle a block edge.
  GrepRequest all = Req("^(filler|MARK) [0-9]+$", OutputMode::kCount);
  EXPECT_EQ(RunGrep(ws, all).files[0].matches, static_cast<uint64_t>(kLines));
}

TEST(SearchGrepTest, CapIsDeterministicAndTotalsExact) {
  TempWorkspace ws;
  for (int i = 0; i < 30; ++i) ws.Write(absl::StrCat("f", 10 + i, ".txt"), "hit\nhit\nhit\n");
  for (int threads : {1, 2, 4}) {
    GrepRequest req = Req("hit");
    req.max_results = 7;
    req.threads = threads;
    GrepResult r = RunGrep(ws, req);
    EXPECT_THAT(Lines(r),
                ElementsAre("f10.txt:1:hit", "f10.txt:2:hit", "f10.txt:3:hit", "f11.txt:1:hit",
                            "f11.txt:2:hit", "f11.txt:3:hit", "f12.txt:1:hit"));
    EXPECT_TRUE(r.truncated);
    EXPECT_EQ(r.total_matches, 90u);
    EXPECT_EQ(r.returned_matches, 7u);
    EXPECT_EQ(r.total_files, 30u);

    GrepRequest files = Req("hit", OutputMode::kFilesWithMatches);
    files.max_results = 3;
    files.threads = threads;
    GrepResult f = RunGrep(ws, files);
    EXPECT_THAT(Paths(f), ElementsAre("f10.txt", "f11.txt", "f12.txt"));
    EXPECT_TRUE(f.truncated);
    EXPECT_EQ(f.total_files, 30u);
  }
  GrepRequest exact = Req("hit", OutputMode::kFilesWithMatches);
  exact.max_results = 30;
  EXPECT_FALSE(RunGrep(ws, exact).truncated);
}

TEST(SearchGrepTest, CapKeepsContextOfTheLastMatchOnly) {
  TempWorkspace ws;
  ws.Write("f.txt", "a\nhit1\nb\nc\nhit2\nd\n");
  GrepRequest req = Req("hit");
  req.context_lines = 1;
  req.max_results = 1;
  GrepResult r = RunGrep(ws, req);
  EXPECT_THAT(Lines(r), ElementsAre("f.txt-1-a", "f.txt:2:hit1", "f.txt-3-b"));
  EXPECT_EQ(r.total_matches, 2u);
  EXPECT_TRUE(r.truncated);
}

TEST(SearchGrepTest, BinaryFilesAreSkipped) {
  TempWorkspace ws;
  ws.Write("text.txt", "needle\n");
  ws.Write("early.bin", std::string("needle\n\0\x01\x02", 10));
  ws.Write("late.bin", "needle\n" + std::string(20000, 'a') + std::string("\0", 1));
  GrepResult r = RunGrep(ws, Req("needle", OutputMode::kCount));
  EXPECT_THAT(Paths(r), ElementsAre("text.txt"));
  EXPECT_EQ(r.binary_skipped, 2u);
}

TEST(SearchGrepTest, HiddenIgnoredAndSymlinkedFilesAreSkipped) {
  TempWorkspace outside;
  outside.Write("secret.txt", "needle\n");
  TempWorkspace ws;
  ws.Write(".gitignore", "ignored.txt\n");
  ws.Write("ignored.txt", "needle\n");
  ws.Write(".hidden.txt", "needle\n");
  ws.Write("seen.txt", "needle\n");
  ws.Symlink(outside.Abs("secret.txt"), "link.txt");
  ws.Symlink(outside.path(), "linkdir");
  EXPECT_THAT(Paths(RunGrep(ws, Req("needle", OutputMode::kFilesWithMatches))),
              ElementsAre("seen.txt"));
}

TEST(SearchGrepTest, SingleFileStart) {
  TempWorkspace ws;
  ws.Write(".hidden/f.txt", "x\nneedle\n");
  GrepResult r = RunGrep(ws, Req("needle"), ".hidden/f.txt");
  EXPECT_THAT(Lines(r), ElementsAre(".hidden/f.txt:2:needle"));
}

TEST(SearchGrepTest, LineTextIsValidUtf8AndCut) {
  TempWorkspace ws;
  ws.Write("a.txt", "bad \xFF\xFE byte needle\r\n");
  ws.Write("b.txt", "needle " + std::string(5000, 'x') + "\n");
  GrepRequest req = Req("needle");
  req.max_line_bytes = 100;
  GrepResult r = RunGrep(ws, req);
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[0].lines[0].text, "bad \xEF\xBF\xBD\xEF\xBF\xBD byte needle");  // no '\r'
  EXPECT_FALSE(r.files[0].lines[0].cut);
  EXPECT_EQ(r.files[1].lines[0].text.size(), 100u);
  EXPECT_TRUE(r.files[1].lines[0].cut);
}

TEST(SearchGrepTest, LiteralAndCaseInsensitive) {
  TempWorkspace ws;
  ws.Write("f.txt", "a.b(c)\naXb(c)\nA.B(C)\n");
  GrepRequest lit = Req("a.b(c)");
  lit.matcher.literal = true;
  EXPECT_THAT(Lines(RunGrep(ws, lit)), ElementsAre("f.txt:1:a.b(c)"));
  lit.matcher.case_insensitive = true;
  EXPECT_THAT(Lines(RunGrep(ws, lit)), ElementsAre("f.txt:1:a.b(c)", "f.txt:3:A.B(C)"));
}

TEST(SearchGrepTest, PathsInAnotherWorkspaceAreAbsolute) {
  TempWorkspace first;
  TempWorkspace second;
  second.Write("sub/f.txt", "needle\n");
  auto start =
      OpenConfined(testing::Roots({first.path(), second.path()}), second.Abs("sub"), "path");
  ASSERT_TRUE(start.ok()) << start.status();
  auto r = Grep(*start, Req("needle", OutputMode::kFilesWithMatches));
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Paths(*r), ElementsAre(second.Abs("sub/f.txt")));
  EXPECT_EQ(start->Display(start->relative), second.Abs("sub"));
}

TEST(SearchGrepTest, InvalidRegex) {
  TempWorkspace ws;
  auto start = OpenConfined(testing::Roots({ws.path()}), ".", "path");
  ASSERT_TRUE(start.ok());
  auto r = Grep(*start, Req("(unclosed"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SearchGrepTest, CancelledBeforeOrDuring) {
  TempWorkspace ws;
  for (int i = 0; i < 200; ++i) ws.Write(absl::StrCat("d", i % 10, "/f", i), "needle\n");
  auto start = OpenConfined(testing::Roots({ws.path()}), ".", "path");
  ASSERT_TRUE(start.ok());
  CancellationToken token;
  token.Cancel(CancelReason::kCancelled);
  GrepRequest req = Req("needle");
  req.cancellation = &token;
  EXPECT_EQ(Grep(*start, req).status().code(), absl::StatusCode::kCancelled);
}

// `text` (ASCII) as UTF-16 with a byte order mark.
std::string Utf16(absl::string_view text, bool big_endian) {
  std::string out = big_endian ? "\xFE\xFF" : "\xFF\xFE";
  for (char c : text) {
    if (big_endian) out.push_back('\0');
    out.push_back(c);
    if (!big_endian) out.push_back('\0');
  }
  return out;
}

TEST(SearchGrepTest, Utf16FilesWithABomAreTranscoded) {
  TempWorkspace ws;
  ws.Write("le.txt", Utf16("first line\nfind the needle\nlast\n", false));
  ws.Write("be.txt", Utf16("needle at the start\nsecond\n", true));
  ws.Write("no_bom.bin", std::string("n\0e\0e\0d\0l\0e\0", 12));  // still binary
  const GrepResult r = RunGrep(ws, Req("needle"));
  EXPECT_THAT(Lines(r), ElementsAre("be.txt:1:needle at the start", "le.txt:2:find the needle"));
  EXPECT_EQ(r.binary_skipped, 1u);
}

TEST(SearchGrepTest, BinaryDecisionDoesNotDependOnEarlierFiles) {
  // A worker whose buffer grew for a long line must read the next files in
  // the same blocks as a fresh one: a match in the first 1 MiB is reported
  // even when a NUL follows later.
  TempWorkspace ws;
  ws.Write("long_line.txt", std::string(3 << 20, 'x') + " needle\n");
  std::string mixed = "needle\n" + std::string((3 << 19) - 7, 'y');
  mixed.push_back('\0');
  for (int i = 0; i < 12; ++i) ws.Write(absl::StrCat("mixed", i, ".txt"), mixed);
  GrepRequest req = Req("needle", OutputMode::kFilesWithMatches);
  req.threads = 1;
  const GrepResult r = RunGrep(ws, req);
  EXPECT_EQ(r.total_files, 13u);
  EXPECT_EQ(r.binary_skipped, 0u);
  for (int i = 0; i < 12; ++i) {
    const std::string name = absl::StrCat("mixed", i, ".txt");
    EXPECT_EQ(Paths(RunGrep(ws, req, name)), std::vector<std::string>{name});
  }
}

// A file whose second line is 50 MB long with a match far from its start.
void WriteLongLineFile(const TempWorkspace& ws) {
  std::string long_line(50'000'000, 'a');
  long_line.replace(20'000'000, 6, "needle");
  long_line.replace(long_line.size() - 6, 6, "needle");
  ws.Write("long.txt", "context before\n" + long_line + "\nneedle after\ntail\n");
}

// Concurrent greps of the long line (content, count and files modes; the file
// named or found by a walk) all find the right lines while the buffers they
// hold together stay within the budget.
void GrepLongLineConcurrently(const TempWorkspace& ws, int greps) {
  ResetGrepBufferPeak();
  std::vector<GrepResult> results(static_cast<size_t>(greps));
  std::vector<std::thread> threads;
  for (int i = 0; i < greps; ++i) {
    threads.emplace_back([&ws, &results, i] {
      GrepRequest req = Req("needle", static_cast<OutputMode>(i % 3));
      req.context_lines = 1;
      req.max_line_bytes = 100;
      req.threads = 2;
      results[static_cast<size_t>(i)] = RunGrep(ws, req, i % 2 == 0 ? "long.txt" : ".");
    });
  }
  for (std::thread& t : threads) t.join();
  const GrepBufferUsage usage = GrepBuffers();
  EXPECT_LE(usage.peak, usage.budget);
  EXPECT_EQ(usage.held, 0u);  // returned when the calls ended
  const std::string head(100, 'a');
  for (int i = 0; i < greps; ++i) {
    const GrepResult& r = results[static_cast<size_t>(i)];
    ASSERT_EQ(r.files.size(), 1u) << i;
    switch (static_cast<OutputMode>(i % 3)) {
      case OutputMode::kContent:
        EXPECT_THAT(Lines(r), ElementsAre("long.txt-1-context before", "long.txt:2:" + head,
                                          "long.txt:3:needle after", "long.txt-4-tail"));
        EXPECT_TRUE(r.files[0].lines[1].cut);
        EXPECT_EQ(r.total_matches, 2u);
        break;
      case OutputMode::kCount:
        EXPECT_EQ(r.files[0].matches, 2u);
        break;
      case OutputMode::kFilesWithMatches:
        EXPECT_EQ(r.files[0].path, "long.txt");
        break;
    }
  }
}

TEST(SearchGrepTest, ConcurrentGrepsOfALongLineStayWithinTheBufferBudget) {
  TempWorkspace ws;
  WriteLongLineFile(ws);
  GrepLongLineConcurrently(ws, 16);
}

TEST(SearchGrepTest, LongLineAsContextAndPastTheCap) {
  // Lines over kMaxLineBytes as after-context, and matching after the cap is
  // reached (counted, not stored).
  TempWorkspace ws;
  const std::string long_line(kMaxLineBytes + (3 << 20), 'b');
  ws.Write("f.txt", "needle 1\n" + long_line + "\nx\n" + long_line + "needle\nneedle 4\n");
  GrepRequest req = Req("needle");
  req.context_lines = 1;
  req.max_line_bytes = 10;
  req.max_results = 1;
  GrepResult r = RunGrep(ws, req);
  EXPECT_THAT(Lines(r), ElementsAre("f.txt:1:needle 1", "f.txt-2-bbbbbbbbbb"));
  EXPECT_TRUE(r.files[0].lines[1].cut);
  EXPECT_EQ(r.total_matches, 3u);
  req.max_results = 10;
  EXPECT_THAT(Lines(RunGrep(ws, req)),
              ElementsAre("f.txt:1:needle 1", "f.txt-2-bbbbbbbbbb", "f.txt-3-x",
                          "f.txt:4:bbbbbbbbbb", "f.txt:5:needle 4"));
  EXPECT_EQ(RunGrep(ws, Req("needle", OutputMode::kCount)).files[0].matches, 3u);
}

TEST(SearchGrepTest, ConcurrentGrepsShareASmallBudget) {
  // Room for five first buffers: the others wait, and none can grow, so the
  // long line is searched in windows of the first buffer's size.
  TempWorkspace ws;
  WriteLongLineFile(ws);
  SetGrepBufferBudget(6 << 20);
  GrepLongLineConcurrently(ws, 16);
  SetGrepBufferBudget(kDefaultGrepBufferBudget);
}

}  // namespace
}  // namespace toolexec::search
