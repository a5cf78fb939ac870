// create_file (DESIGN "Built-in tools": parents made, overwrite refused unless
// asked, atomic temp + fsync + rename, never through a planted symlink,
// TargetFile alias; [Arguments] validation; [Display] display).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/files/file_tools.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::CallTool;
using testing::J;
using testing::Quoted;
using testing::Flag;
using testing::Str;
using testing::TempTree;


class CreateFileTest : public ::testing::Test {
 protected:
  absl::StatusOr<Json> Create(const std::string& args) {
    builtin::CreateFileTool tool(options_);
    return CallTool(tool, args, {t_.path()});
  }
  absl::StatusOr<Json> CreateAt(const std::string& path, const std::string& contents,
                                bool overwrite = false) {
    return Create(absl::StrCat(R"({"file_path":)", Quoted(path), R"(,"contents":)",
                               Quoted(contents), R"(,"overwrite":)", overwrite ? "true" : "false",
                               "}"));
  }
  // No ".x.tmp-..." files anywhere in the tree.
  void ExpectNoTempFiles() {
    for (const std::string& p : t_.ListAll()) EXPECT_EQ(p.find(".tmp-"), std::string::npos) << p;
  }

  TempTree t_;
  BuiltinOptions options_;
};

TEST_F(CreateFileTest, CreatesWithParents) {
  auto r = CreateAt("src/deep/er/new.cc", "int main() {}\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Str(*r, "path"), "src/deep/er/new.cc");
  EXPECT_EQ((*r)["bytes_written"].GetUint64(), 14u);
  EXPECT_TRUE(Flag(*r, "created"));
  EXPECT_EQ(Str(*r, "sha256"), fs::Sha256Hex("int main() {}\n"));
  EXPECT_EQ(t_.Read("src/deep/er/new.cc"), "int main() {}\n");
  mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(t_.Mode("src/deep/er/new.cc"), 0666u & ~mask);
  ExpectNoTempFiles();
}

TEST_F(CreateFileTest, EmptyAndBinaryishContents) {
  ASSERT_TRUE(CreateAt("empty", "").ok());
  EXPECT_EQ(t_.Read("empty"), "");
  std::string nul("a\0b", 3);
  ASSERT_TRUE(CreateAt("nul", nul).ok());
  EXPECT_EQ(t_.Read("nul"), nul);
}

TEST_F(CreateFileTest, RefusesToOverwriteUnlessAsked) {
  t_.Write("a.txt", "old\n", 0755);
  auto r = CreateAt("a.txt", "new\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kToolFailed);
  EXPECT_THAT(r.status().message(), HasSubstr("'a.txt' already exists (4 bytes)"));
  EXPECT_THAT(r.status().message(), HasSubstr("overwrite: true"));
  EXPECT_THAT(r.status().message(), HasSubstr("edit_file"));
  EXPECT_EQ(t_.Read("a.txt"), "old\n");

  auto o = CreateAt("a.txt", "new\n", /*overwrite=*/true);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(Flag(*o, "created"));
  EXPECT_EQ(t_.Read("a.txt"), "new\n");
  EXPECT_EQ(t_.Mode("a.txt"), 0755u);  // the replaced file's mode is kept
  ExpectNoTempFiles();
}

// Overwriting keeps set-user-ID, set-group-ID and sticky bits too (the mode
// is set after the chown that keeps the owner, which clears them).
TEST_F(CreateFileTest, OverwriteKeepsSpecialModeBitsAsRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to keep the owner";
  t_.Write("tool", "old\n", 06755);
  ASSERT_TRUE(CreateAt("tool", "new\n", /*overwrite=*/true).ok());
  EXPECT_EQ(t_.Read("tool"), "new\n");
  EXPECT_EQ(t_.Mode("tool"), 06755u);
}

TEST_F(CreateFileTest, TargetFileAlias) {
  auto alias = Create(R"({"TargetFile":"x/alias.txt","contents":"a"})");
  ASSERT_TRUE(alias.ok()) << alias.status();
  EXPECT_EQ(t_.Read("x/alias.txt"), "a");
  EXPECT_EQ(Str(*alias, "path"), "x/alias.txt");
  auto both_same = Create(R"({"file_path":"same.txt","TargetFile":"same.txt","contents":"s"})");
  EXPECT_TRUE(both_same.ok()) << both_same.status();
  auto both_differ = Create(R"({"file_path":"one.txt","TargetFile":"two.txt","contents":"d"})");
  EXPECT_EQ(ErrorCodeOf(both_differ.status()), ErrorCode::kInvalidArguments);
  EXPECT_THAT(both_differ.status().message(), HasSubstr("name different files"));
  EXPECT_FALSE(t_.Exists("one.txt"));
  EXPECT_FALSE(t_.Exists("two.txt"));
  auto neither = Create(R"({"contents":"n"})");
  EXPECT_EQ(ErrorCodeOf(neither.status()), ErrorCode::kInvalidArguments);
  EXPECT_THAT(neither.status().message(), HasSubstr("file_path is required"));
  auto no_contents = Create(R"({"file_path":"c.txt"})");
  EXPECT_EQ(ErrorCodeOf(no_contents.status()), ErrorCode::kInvalidArguments);
  auto wrong_type = Create(R"({"file_path":"c.txt","contents":"x","overwrite":"maybe"})");
  EXPECT_EQ(ErrorCodeOf(wrong_type.status()), ErrorCode::kInvalidArguments);
  // [Arguments]: "true" is coerced to true.
  t_.Write("c.txt", "old");
  EXPECT_TRUE(Create(R"({"file_path":"c.txt","contents":"x","overwrite":"true"})").ok());
  EXPECT_EQ(t_.Read("c.txt"), "x");
}

TEST_F(CreateFileTest, NeverWritesThroughAPlantedSymlink) {
  TempTree outside;
  outside.Write("victim", "precious");
  t_.Write("real.txt", "real");
  t_.Symlink("in_link", "real.txt");
  t_.Symlink("out_link", outside.Abs("victim"));
  t_.Symlink("rel_out", "../" + outside.path().substr(outside.path().rfind('/') + 1) + "/victim");
  t_.Symlink("dangling", "nowhere.txt");
  for (const char* link : {"in_link", "out_link", "rel_out", "dangling"}) {
    // A link that leads out is an escape attempt (DENIED, like any path out);
    // one that stays inside is refused as a link.
    bool leads_out = absl::string_view(link).find("out") != absl::string_view::npos;
    for (bool overwrite : {false, true}) {
      SCOPED_TRACE(absl::StrCat(link, overwrite ? " overwrite" : ""));
      auto r = CreateAt(link, "PWNED", overwrite);
      ASSERT_FALSE(r.ok());
      if (leads_out) {
        EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kDenied);
        EXPECT_THAT(r.status().message(), HasSubstr("outside the workspace"));
      } else {
        EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kToolFailed);
        EXPECT_THAT(r.status().message(), HasSubstr("is a symbolic link"));
      }
      EXPECT_TRUE(t_.IsSymlink(link));
    }
  }
  EXPECT_EQ(t_.Read("real.txt"), "real");
  EXPECT_EQ(outside.Read("victim"), "precious");
  EXPECT_FALSE(t_.Exists("nowhere.txt"));
  ExpectNoTempFiles();
}

TEST_F(CreateFileTest, DirectoriesAndBadNames) {
  t_.Mkdir("dir");
  auto d = CreateAt("dir", "x", true);
  EXPECT_THAT(d.status().message(), HasSubstr("is a directory"));
  auto slash = CreateAt("newdir/", "x");
  EXPECT_EQ(ErrorCodeOf(slash.status()), ErrorCode::kInvalidArguments);
  EXPECT_THAT(slash.status().message(), HasSubstr("names a directory"));
  EXPECT_FALSE(t_.Exists("newdir"));
  auto root = CreateAt(".", "x");
  EXPECT_EQ(ErrorCodeOf(root.status()), ErrorCode::kInvalidArguments);
  t_.Write("file", "f");
  auto under_file = CreateAt("file/child.txt", "x");
  EXPECT_FALSE(under_file.ok());
  EXPECT_THAT(under_file.status().message(), HasSubstr("not a directory"));
  auto escape = CreateAt("../escaped.txt", "x");
  EXPECT_EQ(ErrorCodeOf(escape.status()), ErrorCode::kDenied);
  ASSERT_EQ(mkfifo(t_.Abs("fifo").c_str(), 0644), 0);
  EXPECT_THAT(CreateAt("fifo", "x", true).status().message(), HasSubstr("not a regular file"));
}

TEST_F(CreateFileTest, PathEndingInDotNamesADirectory) {
  for (const char* path : {"x/.", "y/./", "z/.."}) {
    SCOPED_TRACE(path);
    auto r = CreateAt(path, "x");
    EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kInvalidArguments);
    EXPECT_THAT(r.status().message(), HasSubstr("names a directory"));
  }
  EXPECT_TRUE(t_.ListAll().empty());
}

// A write that is refused as leaving the workspace creates nothing, not even
// the directories on its way out.
TEST_F(CreateFileTest, DeniedWriteCreatesNoDirectories) {
  t_.Mkdir("a");
  for (const char* path : {"n1/n2/../../../e", "n1/../../e", "a/n1/../../../e",
                           "n1/n2/../../n3/../../e"}) {
    SCOPED_TRACE(path);
    auto r = CreateAt(path, "x");
    EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kDenied) << r.status();
    EXPECT_EQ(t_.ListAll(), std::vector<std::string>{"a"});
  }
  // Climbing back inside still works, creating what the path passes through.
  auto inside = CreateAt("n1/n2/../../e", "x");
  ASSERT_TRUE(inside.ok()) << inside.status();
  EXPECT_EQ(t_.Read("e"), "x");
  EXPECT_TRUE(t_.Exists("n1/n2"));
}

TEST_F(CreateFileTest, ContentsOverTheLimit) {
  options_.max_file_bytes = 10;
  auto r = CreateAt("big", std::string(11, 'x'));
  EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kInvalidArguments);
  EXPECT_THAT(r.status().message(), HasSubstr("the limit is 10"));
  EXPECT_FALSE(t_.Exists("big"));
}

// A reader racing the writes only ever sees a whole old or whole new file.
TEST_F(CreateFileTest, ReadersNeverSeeAMix) {
  const std::string a(1 << 20, 'A'), b(1 << 20, 'B');
  ASSERT_TRUE(CreateAt("atomic.bin", a).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, torn{0};
  std::thread reader([&] {
    while (!stop.load()) {
      std::string s = t_.Read("atomic.bin");
      if (s.empty()) continue;  // the open raced nothing here: rename keeps a file present
      ++reads;
      if (s != a && s != b) ++torn;
    }
  });
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(CreateAt("atomic.bin", i % 2 ? a : b, true).ok());
  stop = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(torn.load(), 0);
  ExpectNoTempFiles();
}

TEST_F(CreateFileTest, DisplayAndSummary) {
  builtin::CreateFileTool tool(options_);
  Json input = J(R"({"file_path":"src/a.cc","contents":"hello\n"})");
  auto r = CallTool(tool, ToJsonString(input), {t_.path()});
  ASSERT_TRUE(r.ok());
  DisplayResult d = tool.display(input, *r);
  EXPECT_EQ(d.title, "src/a.cc");
  EXPECT_EQ(d.content, "hello\n");
  EXPECT_FALSE(d.is_truncated);
  EXPECT_EQ(tool.compact_summary(input, *r, true), "[create_file: src/a.cc (6 bytes, created)]");
  EXPECT_EQ(tool.compact_summary(input, J(R"({"error":"x"})"), false),
            "[create_file: src/a.cc: error]");
  Json alias = J(R"({"TargetFile":"t.txt","contents":"x"})");
  EXPECT_EQ(tool.display_title(alias), "t.txt");
  std::string big(builtin::kFileDisplayMaxBytes + 10, 'z');
  Json big_input = J(absl::StrCat(R"({"file_path":"b","contents":)", Quoted(big), "}"));
  DisplayResult bd = tool.display(big_input, *r);
  EXPECT_TRUE(bd.is_truncated);
  EXPECT_EQ(bd.full_length, big.size());
  auto perms = tool.required_permissions(input);
  ASSERT_EQ(perms.size(), 1u);
  EXPECT_EQ(perms[0].level, PermissionLevel::kWrite);
  EXPECT_EQ(perms[0].value, "src/a.cc");
}

}  // namespace
}  // namespace toolexec
