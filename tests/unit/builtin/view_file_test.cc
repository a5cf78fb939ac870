// view_file (DESIGN "Built-in tools"; [Failures are results] failures as results, [Arguments] coercion,
// [Tool sets] read_only, [Display] display and compact summary).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/files/file_tools.h"
#include "tools/workspace/text.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::CallTool;
using testing::Quoted;
using testing::Flag;
using testing::Int;
using testing::Str;
using testing::TempTree;


std::string Lines(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) absl::StrAppend(&s, "line ", i, "\n");
  return s;
}

class ViewFileTest : public ::testing::Test {
 protected:
  absl::StatusOr<Json> View(const std::string& args) {
    builtin::ViewFileTool tool(options_);
    return CallTool(tool, args, {t_.path()});
  }
  absl::StatusOr<Json> ViewPath(const std::string& path, const std::string& extra = "") {
    return View(absl::StrCat(R"({"file_path":)", Quoted(path), extra, "}"));
  }

  TempTree t_;
  BuiltinOptions options_;
};

TEST_F(ViewFileTest, NumbersLinesLikeCatN) {
  t_.Write("src/a.txt", "alpha\nbeta\ngamma\n");
  auto r = ViewPath("src/a.txt");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Str(*r, "path"), "src/a.txt");
  EXPECT_EQ(Str(*r, "content"), "     1\talpha\n     2\tbeta\n     3\tgamma\n");
  EXPECT_EQ(Int(*r, "start_line"), 1);
  EXPECT_EQ(Int(*r, "end_line"), 3);
  EXPECT_EQ(Int(*r, "total_lines"), 3);
  EXPECT_FALSE(Flag(*r, "truncated"));
  EXPECT_FALSE(r->HasMember("hint"));
  EXPECT_EQ(Str(*r, "line_endings"), "lf");
  EXPECT_EQ(Int(*r, "size_bytes"), 17);
  EXPECT_EQ(Str(*r, "sha256"), fs::Sha256Hex("alpha\nbeta\ngamma\n"));
  EXPECT_FALSE(r->HasMember("final_newline"));
  EXPECT_FALSE(r->HasMember("invalid_utf8"));
  EXPECT_FALSE(r->HasMember("bom"));
}

TEST_F(ViewFileTest, Sha256IsTheStandardDigest) {
  t_.Write("abc", "abc");
  auto r = ViewPath("abc");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Str(*r, "sha256"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(ViewFileTest, RangeIsInclusiveAndClamped) {
  t_.Write("f", Lines(1, 10));
  auto r = ViewPath("f", R"(,"start_line":3,"end_line":5)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Str(*r, "content"), "     3\tline 3\n     4\tline 4\n     5\tline 5\n");
  EXPECT_EQ(Int(*r, "end_line"), 5);
  EXPECT_FALSE(Flag(*r, "truncated"));
  auto clamped = ViewPath("f", R"(,"start_line":9,"end_line":500)");
  ASSERT_TRUE(clamped.ok());
  EXPECT_EQ(Str(*clamped, "content"), "     9\tline 9\n    10\tline 10\n");
  EXPECT_EQ(Int(*clamped, "end_line"), 10);
  EXPECT_FALSE(Flag(*clamped, "truncated"));
  auto one = ViewPath("f", R"(,"start_line":10,"end_line":10)");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(Str(*one, "content"), "    10\tline 10\n");
}

TEST_F(ViewFileTest, StartBeyondTheEndIsInvalidArguments) {
  t_.Write("f", Lines(1, 3));
  auto r = ViewPath("f", R"(,"start_line":4)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kInvalidArguments);
  EXPECT_THAT(r.status().message(), HasSubstr("start_line 4 is beyond the end of 'f', which has 3 lines"));
  auto backwards = ViewPath("f", R"(,"start_line":3,"end_line":2)");
  EXPECT_EQ(ErrorCodeOf(backwards.status()), ErrorCode::kInvalidArguments);
  EXPECT_THAT(backwards.status().message(), HasSubstr("end_line (2) is before start_line (3)"));
  auto zero = ViewPath("f", R"(,"start_line":0)");
  EXPECT_EQ(ErrorCodeOf(zero.status()), ErrorCode::kInvalidArguments);
}

TEST_F(ViewFileTest, EmptyFile) {
  t_.Write("empty", "");
  auto r = ViewPath("empty");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Str(*r, "content"), "");
  EXPECT_EQ(Int(*r, "total_lines"), 0);
  EXPECT_EQ(Int(*r, "end_line"), 0);
  EXPECT_FALSE(Flag(*r, "truncated"));
  EXPECT_EQ(Str(*r, "line_endings"), "none");
  auto beyond = ViewPath("empty", R"(,"start_line":2)");
  EXPECT_EQ(ErrorCodeOf(beyond.status()), ErrorCode::kInvalidArguments);
  EXPECT_THAT(beyond.status().message(), HasSubstr("the file is empty"));
}

TEST_F(ViewFileTest, NoTrailingNewline) {
  t_.Write("f", "one\ntwo");
  auto r = ViewPath("f");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Str(*r, "content"), "     1\tone\n     2\ttwo");
  EXPECT_EQ(Int(*r, "total_lines"), 2);
  ASSERT_TRUE(r->HasMember("final_newline"));
  EXPECT_FALSE((*r)["final_newline"].GetBool());
  t_.Write("single", "x");
  auto s = ViewPath("single");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Str(*s, "content"), "     1\tx");
  EXPECT_EQ(Int(*s, "total_lines"), 1);
  EXPECT_EQ(Str(*s, "line_endings"), "none");
}

TEST_F(ViewFileTest, CrlfShownFaithfully) {
  t_.Write("dos.txt", "a\r\nb\r\n");
  auto r = ViewPath("dos.txt");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Str(*r, "content"), "     1\ta\r\n     2\tb\r\n");
  EXPECT_EQ(Str(*r, "line_endings"), "crlf");
  EXPECT_EQ(Int(*r, "total_lines"), 2);
  t_.Write("mixed.txt", "a\r\nb\nc\n");
  auto m = ViewPath("mixed.txt");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(Str(*m, "line_endings"), "mixed");
  // A lone CR is not a line break.
  t_.Write("cr.txt", "a\rb\n");
  auto c = ViewPath("cr.txt");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Int(*c, "total_lines"), 1);
  EXPECT_EQ(Str(*c, "content"), "     1\ta\rb\n");
}

TEST_F(ViewFileTest, CrlfSplitAcrossReadChunks) {
  // The reader works in 256 KiB chunks: put "\r" last in the first one.
  std::string first(256 * 1024 - 1, 'x');
  t_.Write("big.txt", first + "\r\nsecond\r\n");
  auto r = ViewPath("big.txt", R"(,"start_line":2)");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Str(*r, "line_endings"), "crlf");
  EXPECT_EQ(Int(*r, "total_lines"), 2);
  EXPECT_EQ(Str(*r, "content"), "     2\tsecond\r\n");
}

TEST_F(ViewFileTest, InvalidUtf8IsReplacedAndReported) {
  t_.Write("latin1.txt", "caf\xe9\nok \xe2\x82\xac\n\xff\xfe\xfd trailing\n");
  auto r = ViewPath("latin1.txt");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Flag(*r, "invalid_utf8"));
  EXPECT_EQ(Str(*r, "content"),
            "     1\tcaf\xEF\xBF\xBD\n     2\tok \xe2\x82\xac\n     3\t\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD trailing\n");
  // The result serializes as valid JSON text.
  auto reparsed = ParseJson(ToJsonString(*r));
  EXPECT_TRUE(reparsed.ok());
}

TEST_F(ViewFileTest, BinaryFilesAreDescribedNotDumped) {
  t_.Write("blob.bin", std::string("abc\0def\x01\x02", 9));
  auto r = ViewPath("blob.bin");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Flag(*r, "binary"));
  EXPECT_EQ(Int(*r, "size_bytes"), 9);
  EXPECT_EQ(Str(*r, "mime_type"), "application/octet-stream");
  EXPECT_FALSE(r->HasMember("content"));
  EXPECT_THAT(Str(*r, "message"), HasSubstr("is a binary file"));

  std::string png("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
  png += std::string(2000, '\x07');
  t_.Write("img.png", png);
  auto p = ViewPath("img.png");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(Str(*p, "mime_type"), "image/png");
  EXPECT_THAT(Str(*p, "message"), HasSubstr("image/png, 2.0 KiB"));
  // A PDF has no NUL in its first bytes but is still binary.
  t_.Write("doc.pdf", "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n");
  auto d = ViewPath("doc.pdf");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(Str(*d, "mime_type"), "application/pdf");
}

TEST_F(ViewFileTest, LineCapTruncatesWithAHint) {
  options_.view_max_lines = 5;
  t_.Write("f", Lines(1, 12));
  auto r = ViewPath("f");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Flag(*r, "truncated"));
  EXPECT_EQ(Int(*r, "end_line"), 5);
  EXPECT_EQ(Int(*r, "next_start_line"), 6);
  EXPECT_EQ(Int(*r, "total_lines"), 12);
  EXPECT_EQ(Str(*r, "hint"),
            "Showing lines 1-5 of 12 (cut at the 5-line limit). Call view_file with "
            "start_line=6 to continue.");
  auto next = ViewPath("f", R"(,"start_line":11)");
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(Flag(*next, "truncated"));
  EXPECT_EQ(Str(*next, "content"), "    11\tline 11\n    12\tline 12\n");
  // An explicit range wider than the cap is cut too.
  auto wide = ViewPath("f", R"(,"start_line":2,"end_line":12)");
  ASSERT_TRUE(wide.ok());
  EXPECT_TRUE(Flag(*wide, "truncated"));
  EXPECT_EQ(Int(*wide, "end_line"), 6);
  // A range that fits is not truncated even though the file goes on.
  auto fits = ViewPath("f", R"(,"start_line":2,"end_line":4)");
  ASSERT_TRUE(fits.ok());
  EXPECT_FALSE(Flag(*fits, "truncated"));
}

TEST_F(ViewFileTest, ByteCapTruncatesOnWholeLines) {
  options_.view_max_bytes = 100;
  std::string content;
  for (int i = 1; i <= 10; ++i) absl::StrAppend(&content, std::string(20, 'a' + i), "\n");
  t_.Write("f", content);
  auto r = ViewPath("f");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Flag(*r, "truncated"));
  // Each numbered line is 7 + 20 + 1 = 28 bytes: three fit in 100.
  EXPECT_EQ(Int(*r, "end_line"), 3);
  EXPECT_EQ(Str(*r, "content").size(), 84u);
  EXPECT_THAT(Str(*r, "hint"), HasSubstr("100-byte limit"));
  EXPECT_THAT(Str(*r, "hint"), HasSubstr("start_line=4"));
}

TEST_F(ViewFileTest, ALineLongerThanTheByteCapIsCut) {
  options_.view_max_bytes = 200;
  t_.Write("min.js", std::string(5000, 'x') + "\nnext\n");
  auto r = ViewPath("min.js");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Flag(*r, "truncated"));
  EXPECT_EQ(Int(*r, "end_line"), 1);
  EXPECT_EQ(Int(*r, "next_start_line"), 2);
  EXPECT_LE(Str(*r, "content").size(), 200u);
  EXPECT_THAT(Str(*r, "content"), HasSubstr("[... line 1 cut: it is 4.9 KiB]"));
  EXPECT_THAT(Str(*r, "hint"), HasSubstr("Line 1 is longer than the byte limit"));
  auto next = ViewPath("min.js", R"(,"start_line":2)");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(Str(*next, "content"), "     2\tnext\n");
}

TEST_F(ViewFileTest, CutNeverSplitsAUtf8Character) {
  options_.view_max_bytes = 100;
  std::string euros;
  for (int i = 0; i < 200; ++i) euros += "\xe2\x82\xac";
  t_.Write("e", euros + "\n");
  auto r = ViewPath("e");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(Flag(*r, "invalid_utf8"));
  std::string content = Str(*r, "content");
  std::string check;
  EXPECT_FALSE(AppendSanitizedUtf8(&check, content));
}

TEST_F(ViewFileTest, BomIsReportedNotShown) {
  t_.Write("bom.txt", "\xEF\xBB\xBFhello\nworld\n");
  auto r = ViewPath("bom.txt");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Flag(*r, "bom"));
  EXPECT_EQ(Str(*r, "content"), "     1\thello\n     2\tworld\n");
}

TEST_F(ViewFileTest, LargeFileStreamsWithExactCounts) {
  std::string content;
  for (int i = 1; i <= 100000; ++i) absl::StrAppend(&content, "row ", i, "\n");
  t_.Write("big", content);
  auto r = ViewPath("big", R"(,"start_line":99999)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Int(*r, "total_lines"), 100000);
  EXPECT_EQ(Str(*r, "content"), " 99999\trow 99999\n100000\trow 100000\n");
  EXPECT_EQ(Str(*r, "sha256"), fs::Sha256Hex(content));
  EXPECT_EQ(Int(*r, "size_bytes"), static_cast<int64_t>(content.size()));
}

TEST_F(ViewFileTest, ErrorsAreClear) {
  t_.Mkdir("dir");
  auto dir = ViewPath("dir");
  EXPECT_EQ(ErrorCodeOf(dir.status()), ErrorCode::kToolFailed);
  EXPECT_THAT(dir.status().message(), HasSubstr("'dir' is a directory; use list_directory"));
  auto missing = ViewPath("src/nope.cc");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_EQ(ErrorCodeOf(missing.status()), ErrorCode::kToolFailed);
  EXPECT_EQ(missing.status().message(), "no such file or directory: src/nope.cc");
  ASSERT_EQ(mkfifo(t_.Abs("fifo").c_str(), 0644), 0);
  auto fifo = ViewPath("fifo");
  EXPECT_THAT(fifo.status().message(), HasSubstr("is a fifo, not a regular file"));
  auto outside = ViewPath("../etc/passwd");
  EXPECT_EQ(ErrorCodeOf(outside.status()), ErrorCode::kDenied);
  EXPECT_THAT(outside.status().message(), HasSubstr("is outside the workspace"));
  auto no_path = View("{}");
  EXPECT_EQ(ErrorCodeOf(no_path.status()), ErrorCode::kInvalidArguments);
}

// Like open(2): a path ending in "/" (or "/.") must name a directory.
TEST_F(ViewFileTest, TrailingSlashOnAFileIsNotADirectory) {
  t_.Write("a.txt", "hello\n");
  for (const char* path : {"a.txt/", "a.txt/."}) {
    SCOPED_TRACE(path);
    auto r = ViewPath(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kToolFailed);
    EXPECT_THAT(r.status().message(), HasSubstr("'a.txt' is not a directory"));
  }
  EXPECT_TRUE(ViewPath("a.txt").ok());
}

// Opened with O_NONBLOCK, a socket fails with ENXIO; say what it is instead.
TEST_F(ViewFileTest, SocketIsNamedAsASocket) {
  int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  std::string where = t_.Abs("sock");
  ASSERT_LT(where.size(), sizeof(addr.sun_path));
  memcpy(addr.sun_path, where.c_str(), where.size() + 1);
  ASSERT_EQ(bind(sock, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)), 0);
  auto r = ViewPath("sock");
  close(sock);
  EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kToolFailed);
  EXPECT_THAT(r.status().message(), HasSubstr("'sock' is a socket, not a regular file"));
}

TEST_F(ViewFileTest, UnreadableFileIsAToolFailure) {
  t_.Write("secret", "x", 0000);
  // Root reads anything (CAP_DAC_OVERRIDE): run the call, which happens on
  // this thread, with this thread's file-system uid set to nobody, which
  // drops those capabilities for this thread only.
  bool as_nobody = geteuid() == 0;
  if (as_nobody) {
    ASSERT_EQ(chmod(t_.path().c_str(), 0755), 0);
    syscall(SYS_setfsuid, 65534);
    if (syscall(SYS_setfsuid, -1) != 65534) {  // -1 changes nothing, returns the current
      syscall(SYS_setfsuid, 0);
      GTEST_SKIP() << "cannot change the file-system uid here";
    }
  }
  auto r = ViewPath("secret");
  if (as_nobody) syscall(SYS_setfsuid, 0);  // before any assertion can return
  EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kToolFailed);
  EXPECT_THAT(r.status().message(), HasSubstr("permission denied"));
}

TEST_F(ViewFileTest, RelativeToTheWorkspaceNotTheCwd) {
  TempTree elsewhere;
  elsewhere.Write("only_in_cwd.txt", "cwd\n");
  char old[PATH_MAX];
  ASSERT_NE(getcwd(old, sizeof(old)), nullptr);
  ASSERT_EQ(chdir(elsewhere.path().c_str()), 0);
  auto r = ViewPath("only_in_cwd.txt");
  ASSERT_EQ(chdir(old), 0);
  EXPECT_TRUE(absl::IsNotFound(r.status()));
}

TEST_F(ViewFileTest, AbsolutePathInsideTheWorkspace) {
  t_.Write("a/b.txt", "b\n");
  auto r = ViewPath(t_.Abs("a/b.txt"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Str(*r, "path"), "a/b.txt");
}

TEST_F(ViewFileTest, HonoursCancellation) {
  t_.Write("f", "x\n");
  builtin::ViewFileTool tool(options_);
  CancellationToken token;
  token.Cancel(CancelReason::kCancelled);
  auto r = CallTool(tool, R"({"file_path":"f"})", {t_.path()}, &token);
  EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kCancelled);
}

// Through the registry and runner: registration order, metadata, [Arguments]
// coercion of "2" to 2, [Display] display and compact summary.
TEST_F(ViewFileTest, ThroughTheRunner) {
  ToolRegistry registry;
  ASSERT_TRUE(RegisterFileTools(registry, options_).ok());
  EXPECT_EQ(registry.names(),
            (std::vector<std::string>{"view_file", "create_file", "edit_file",
                                      "str_replace_based_edit_tool", "apply_patch"}));
  for (const auto& r : registry.tools()) EXPECT_EQ(r->source, "built-in");
  const Tool& view = *registry.Find("view_file")->tool;
  EXPECT_TRUE(view.spec().read_only);
  EXPECT_EQ(view.spec().type, ToolType::kFileRead);
  EXPECT_FALSE(registry.Find("create_file")->tool->spec().read_only);
  EXPECT_EQ(registry.Find("create_file")->tool->spec().type, ToolType::kTextEdit);
  EXPECT_EQ(registry.Find("edit_file")->tool->spec().type, ToolType::kTextEdit);

  t_.Write("src/main.cc", Lines(1, 4));
  ToolRunner::Options ro;
  ro.default_workspace = testing::RootAt(t_.path());
  ToolRunner runner(&registry, ro);
  BatchRequest req;
  CallRequest ok;
  ok.id = "1";
  ok.name = "view_file";
  ok.args_json = R"({"file_path":"src/main.cc","start_line":"2","end_line":3})";
  CallRequest bad;
  bad.id = "2";
  bad.name = "view_file";
  bad.args_json = R"({"file_path":"src/missing.cc"})";
  req.calls.push_back(std::move(ok));
  req.calls.push_back(std::move(bad));
  auto results = runner.Run(std::move(req));
  ASSERT_TRUE(results.ok());
  const ToolCallResult& r = (*results)[0];
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(Str(r.payload, "content"), "     2\tline 2\n     3\tline 3\n");
  EXPECT_EQ(r.display.title, "src/main.cc");
  EXPECT_EQ(r.display.content, "     2\tline 2\n     3\tline 3\n");
  EXPECT_EQ(r.display.content_type, ContentType::kPlainText);
  EXPECT_EQ(r.compact_summary, "[view_file: src/main.cc lines 2-3]");
  const ToolCallResult& e = (*results)[1];
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.error->code, ErrorCode::kToolFailed);
  EXPECT_EQ(e.error_message, "no such file or directory: src/missing.cc");
  EXPECT_EQ(e.compact_summary, "[view_file: src/missing.cc: error]");

  std::vector<PermissionRequirement> perms =
      view.required_permissions(testing::J(R"({"file_path":"src/main.cc"})"));
  ASSERT_EQ(perms.size(), 1u);
  EXPECT_EQ(perms[0].kind, PermissionRequirement::Kind::kPath);
  EXPECT_EQ(perms[0].value, "src/main.cc");
  EXPECT_EQ(perms[0].level, PermissionLevel::kRead);
}

}  // namespace
}  // namespace toolexec
