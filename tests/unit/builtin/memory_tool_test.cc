// memory: Anthropic's memory_20250818 commands with the texts of Anthropic's
// reference implementation (the SDK's local file system memory tool), kept per
// user, surviving a new registry (a daemon restart), confined to /memories.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::Str;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class MemoryToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char ws[] = "/tmp/memory_ws.XXXXXX";
    ASSERT_NE(mkdtemp(ws), nullptr);
    ws_ = ws;
    char mem[] = "/tmp/memory_dir.XXXXXX";
    ASSERT_NE(mkdtemp(mem), nullptr);
    dir_ = mem;
    Build();
  }
  void TearDown() override {
    runner_.reset();
    std::filesystem::remove_all(ws_);
    std::filesystem::remove_all(dir_);
  }
  void Build() {
    runner_.reset();
    registry_ = std::make_unique<ToolRegistry>();
    BuiltinOptions o;
    o.memory_dir = dir_;
    ASSERT_TRUE(RegisterMemoryTool(*registry_, o).ok());
    ToolRunner::Options ro;
    ro.default_workspace = testing::RootAt(ws_);
    runner_ = std::make_unique<ToolRunner>(registry_.get(), ro);
  }
  // `caller`: the authenticated caller that opened the session ("" without auth).
  std::shared_ptr<Session> SessionOf(const std::string& user, const std::string& caller = "") {
    SessionOptions so;
    so.user_id = user;
    so.owner = caller;
    so.workspaces = {testing::RootAt(ws_)};
    return std::make_shared<Session>("s-" + user, so);
  }
  ToolCallResult Memory(const std::string& args, const std::string& user = "alice",
                        const std::string& caller = "") {
    return testing::RunOneCall(*runner_, "memory", args, SessionOf(user, caller));
  }

  std::string ws_, dir_;
  std::unique_ptr<ToolRegistry> registry_;
  std::unique_ptr<ToolRunner> runner_;
};

TEST_F(MemoryToolTest, NotRegisteredWithoutADirectory) {
  ToolRegistry r;
  ASSERT_TRUE(RegisterMemoryTool(r, BuiltinOptions{}).ok());
  EXPECT_EQ(r.size(), 0u);
  BuiltinOptions relative;
  relative.memory_dir = "relative/dir";
  EXPECT_EQ(RegisterMemoryTool(r, relative).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(MemoryToolTest, TheReferenceCommandsAndTexts) {
  auto created = Memory(
      R"({"command":"create","path":"/memories/notes.txt","file_text":"line one\nline two\n"})");
  ASSERT_TRUE(created.ok()) << created.error_message;
  EXPECT_EQ(created.model_content, "File created successfully at: /memories/notes.txt");
  EXPECT_EQ(ReadFile(dir_ + "/alice/notes.txt"), "line one\nline two\n");

  auto again = Memory(R"({"command":"create","path":"/memories/notes.txt","file_text":"x"})");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error_message, "File /memories/notes.txt already exists");

  auto view = Memory(R"({"command":"view","path":"/memories/notes.txt"})");
  EXPECT_EQ(view.model_content,
            "Here's the content of /memories/notes.txt with line numbers:\n"
            "     1\tline one\n     2\tline two\n     3\t");
  auto range = Memory(R"({"command":"view","path":"/memories/notes.txt","view_range":[2,-1]})");
  EXPECT_EQ(range.model_content,
            "Here's the content of /memories/notes.txt with line numbers:\n"
            "     2\tline two\n     3\t");

  auto replaced = Memory(
      R"({"command":"str_replace","path":"/memories/notes.txt","old_str":"two","new_str":"2"})");
  EXPECT_EQ(replaced.model_content,
            "The memory file has been edited. Here is the snippet showing the change (with line "
            "numbers):\n     1\tline one\n     2\tline 2\n     3\t");
  auto missing = Memory(
      R"({"command":"str_replace","path":"/memories/notes.txt","old_str":"zzz","new_str":""})");
  EXPECT_EQ(missing.error_message,
            "No replacement was performed, old_str `zzz` did not appear verbatim in "
            "/memories/notes.txt.");
  auto many = Memory(
      R"({"command":"str_replace","path":"/memories/notes.txt","old_str":"line","new_str":"l"})");
  EXPECT_EQ(many.error_message,
            "No replacement was performed. Multiple occurrences of old_str `line` in lines: 1, 2. "
            "Please ensure it is unique");

  auto inserted = Memory(
      R"({"command":"insert","path":"/memories/notes.txt","insert_line":1,"insert_text":"between\n"})");
  EXPECT_EQ(inserted.model_content, "The file /memories/notes.txt has been edited.");
  EXPECT_EQ(ReadFile(dir_ + "/alice/notes.txt"), "line one\nbetween\nline 2\n");
  auto bad_line = Memory(
      R"({"command":"insert","path":"/memories/notes.txt","insert_line":9,"insert_text":"x"})");
  EXPECT_EQ(bad_line.error_message,
            "Invalid `insert_line` parameter: 9. It should be within the range [0, 3].");

  auto renamed = Memory(
      R"({"command":"rename","old_path":"/memories/notes.txt","new_path":"/memories/a/b.txt"})");
  EXPECT_EQ(renamed.model_content,
            "Successfully renamed /memories/notes.txt to /memories/a/b.txt");
  ASSERT_TRUE(Memory(R"({"command":"create","path":"/memories/c.txt","file_text":""})").ok());
  auto clash = Memory(
      R"({"command":"rename","old_path":"/memories/c.txt","new_path":"/memories/a/b.txt"})");
  EXPECT_EQ(clash.error_message, "The destination /memories/a/b.txt already exists");

  auto dir = Memory(R"({"command":"view","path":"/memories"})");
  EXPECT_THAT(dir.model_content,
              ::testing::StartsWith("Here're the files and directories up to 2 levels deep in "
                                    "/memories, excluding hidden items and node_modules:\n"));
  EXPECT_THAT(dir.model_content, HasSubstr("\t/memories/a/\n"));
  EXPECT_THAT(dir.model_content, HasSubstr("B\t/memories/a/b.txt"));
  EXPECT_THAT(dir.model_content, HasSubstr("0B\t/memories/c.txt"));

  auto deleted = Memory(R"({"command":"delete","path":"/memories/a"})");
  EXPECT_EQ(deleted.model_content, "Successfully deleted /memories/a");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/alice/a"));
  auto gone = Memory(R"({"command":"delete","path":"/memories/a"})");
  EXPECT_EQ(gone.error_message, "The path /memories/a does not exist");
  auto root = Memory(R"({"command":"delete","path":"/memories"})");
  EXPECT_EQ(root.error_message, "Cannot delete the /memories directory itself");
  auto nothing = Memory(R"({"command":"view","path":"/memories/none"})");
  EXPECT_EQ(nothing.error_message,
            "The path /memories/none does not exist. Please provide a valid path.");
}

TEST_F(MemoryToolTest, KeptPerUserAndAcrossRestarts) {
  ASSERT_TRUE(Memory(R"({"command":"create","path":"/memories/fact","file_text":"blue"})").ok());
  Build();  // a new registry and runner over the same directory: a restarted daemon
  auto alice = Memory(R"({"command":"view","path":"/memories/fact"})");
  EXPECT_THAT(alice.model_content, HasSubstr("\tblue"));
  auto bob = Memory(R"({"command":"view","path":"/memories/fact"})", "bob");
  EXPECT_FALSE(bob.ok());
  // A user id cannot name another user's directory, nor leave memory_dir.
  for (const char* user : {"..", "../alice", "alice/..", "."}) {
    auto sneaky = Memory(R"({"command":"view","path":"/memories/fact"})", user);
    EXPECT_FALSE(sneaky.ok()) << user;
  }
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/..%2Falice"));
  // Without a session there is no user to keep memories for.
  auto none = testing::RunOneCall(*runner_, "memory", R"({"command":"view","path":"/memories"})");
  EXPECT_EQ(none.error->code, ErrorCode::kNoContext);
}

TEST_F(MemoryToolTest, AnAuthenticatedCallersUsersAreItsOwn) {
  // Two callers naming the same user_id reach different memories, as they
  // reach different artifacts; neither sees the memories of unauthenticated
  // sessions.
  ASSERT_TRUE(Memory(R"({"command":"create","path":"/memories/secret","file_text":"a"})", "alice",
                     "team-a")
                  .ok());
  auto other = Memory(R"({"command":"view","path":"/memories/secret"})", "alice", "team-b");
  EXPECT_FALSE(other.ok());
  auto anonymous = Memory(R"({"command":"view","path":"/memories/secret"})", "alice");
  EXPECT_FALSE(anonymous.ok());
  auto same = Memory(R"({"command":"view","path":"/memories/secret"})", "alice", "team-a");
  EXPECT_THAT(same.model_content, HasSubstr("\ta"));
  EXPECT_EQ(ReadFile(dir_ + "/@team-a/alice/secret"), "a");
  // No user id spells a caller's directory: '@' is always escaped.
  auto spelled = Memory(R"({"command":"view","path":"/memories/secret"})", "@team-a/alice");
  EXPECT_FALSE(spelled.ok());
  // And no caller name leaves memory_dir.
  ASSERT_TRUE(
      Memory(R"({"command":"create","path":"/memories/x","file_text":"b"})", "u", "../up").ok());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/@..%2Fup/u/x"));
}

TEST_F(MemoryToolTest, PathsCannotLeaveMemories) {
  ASSERT_TRUE(Memory(R"({"command":"view","path":"/memories"})").ok());
  std::filesystem::create_directory_symlink("/etc", dir_ + "/alice/out");
  std::filesystem::create_symlink("../../", dir_ + "/alice/up");
  for (const char* path :
       {"/memories/../secret", "/memories/out/passwd", "/memories/up/x", "/memories/a/../../x",
        "/memories/./../x"}) {
    auto view = Memory(absl::StrCat(R"({"command":"view","path":")", path, R"("})"));
    ASSERT_FALSE(view.ok()) << path;
    EXPECT_EQ(view.error->code, ErrorCode::kDenied) << path << ": " << view.error_message;
    auto create = Memory(absl::StrCat(R"({"command":"create","path":")", path,
                                      R"(","file_text":"x"})"));
    EXPECT_FALSE(create.ok()) << path;
  }
  for (const char* path : {"/etc/passwd", "memories/x", "/memoriesX/y", "/tmp"}) {
    auto r = Memory(absl::StrCat(R"({"command":"view","path":")", path, R"("})"));
    EXPECT_EQ(r.error_message, absl::StrCat("Path must start with /memories, got: ", path));
  }
  // An encoded spelling is a name, not a way out.
  auto encoded = Memory(R"({"command":"create","path":"/memories/%2e%2e/x","file_text":"x"})");
  ASSERT_TRUE(encoded.ok()) << encoded.error_message;
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/alice/%2e%2e/x"));
  auto rename_out =
      Memory(R"({"command":"rename","old_path":"/memories/%2e%2e/x","new_path":"/memories/out/x"})");
  EXPECT_EQ(rename_out.error->code, ErrorCode::kDenied);
  EXPECT_FALSE(std::filesystem::exists("/etc/x"));
  auto delete_out = Memory(R"({"command":"delete","path":"/memories/out/hostname"})");
  EXPECT_EQ(delete_out.error->code, ErrorCode::kDenied);
}

TEST_F(MemoryToolTest, WritesNeedWritePermissionOnTheirPaths) {
  const Tool& t = *registry_->Find("memory")->tool;
  auto view = t.required_permissions(
      testing::J(R"({"command":"view","path":"/memories/a"})"));
  ASSERT_EQ(view.size(), 1u);
  EXPECT_EQ(view[0].value, "/memories/a");
  EXPECT_EQ(view[0].level, PermissionLevel::kRead);
  auto rename = t.required_permissions(
      testing::J(R"({"command":"rename","old_path":"/memories/a","new_path":"/memories/b"})"));
  ASSERT_EQ(rename.size(), 2u);
  EXPECT_EQ(rename[1].value, "/memories/b");
  EXPECT_EQ(rename[1].level, PermissionLevel::kWrite);
}

}  // namespace
}  // namespace toolexec
