// Concurrent writers of one file, run as the daemon runs them: every call of a
// batch at once, through a real ToolRunner. A write reported as done is in the
// file; without expected_sha256 every edit of one file applies (each reads the
// content the previous one wrote); with one expected_sha256 exactly one edit
// applies and the others say that another write changed the file first.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>

#include <functional>
#include <iostream>
#include <optional>
#include <thread>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/files/file_tools.h"
#include "tools/workspace/write_lock.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::Quoted;
using testing::Str;
using testing::TempTree;

constexpr int kEdits = 50;

std::string Slot(int i, absl::string_view value) {
  return absl::StrFormat("slot %02d = %s\n", i, value);
}

std::string Slots(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += Slot(i, "old");
  return out;
}

std::string EditArgs(int i, absl::string_view expected_sha) {
  std::string args = absl::StrCat(R"({"file_path":"f.txt","edits":[{"old_string":)",
                                  Quoted(Slot(i, "old")), R"(,"new_string":)",
                                  Quoted(Slot(i, "new")), "}]");
  if (!expected_sha.empty()) absl::StrAppend(&args, R"(,"expected_sha256":")", expected_sha, "\"");
  return args + "}";
}

// Writes as versions: previous_sha256 -> sha256 of each successful edit.
using Versions = std::map<std::string, std::string>;

// Follows `versions` from `start`: the version it ends at and how many writes
// it took.
std::pair<std::string, size_t> Follow(const Versions& versions, std::string start) {
  size_t steps = 0;
  for (auto it = versions.find(start); it != versions.end() && steps <= versions.size();
       it = versions.find(start)) {
    start = it->second;
    ++steps;
  }
  return {start, steps};
}

class ConcurrentWritesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterFileTools(registry_, BuiltinOptions()).ok());
    ToolRunner::Options ro;
    ro.default_workspace = testing::RootAt(t_.path());
    runner_ = std::make_unique<ToolRunner>(&registry_, ro);
  }

  // `n` edits of f.txt in one batch, edit i turning slot i from old to new.
  std::vector<ToolCallResult> EditBatch(int n, absl::string_view expected_sha = "") {
    BatchRequest req;
    for (int i = 0; i < n; ++i) {
      req.calls.push_back(
          CallRequest{.id = absl::StrCat(i), .name = "edit_file", .args_json = EditArgs(i, expected_sha)});
    }
    auto results = runner_->Run(std::move(req));
    if (!results.ok()) throw std::runtime_error(results.status().ToString());
    return std::move(*results);
  }

  // `rounds` batches of `chain` calls, call(i) turning "step i" of `file` into
  // "step i+1". Returns the rounds in which a call failed or the file did not
  // end at "step <chain>"; the first failure's message is reported.
  int RoundsWhereTheChainBroke(int rounds, int chain, const std::string& file,
                               const std::function<CallRequest(int)>& call) {
    int broke = 0;
    for (int round = 0; round < rounds; ++round) {
      t_.Write(file, "step 0\n");
      BatchRequest req;
      for (int i = 0; i < chain; ++i) req.calls.push_back(call(i));
      auto results = runner_->Run(std::move(req));
      if (!results.ok()) throw std::runtime_error(results.status().ToString());
      bool all_ok = true;
      for (const ToolCallResult& r : *results) {
        if (r.ok()) continue;
        all_ok = false;
        if (broke == 0) ADD_FAILURE() << "call " << r.id << ": " << r.error_message;
      }
      if (!all_ok || t_.Read(file) != absl::StrCat("step ", chain, "\n")) ++broke;
    }
    return broke;
  }

  TempTree t_;
  ToolRegistry registry_;
  std::unique_ptr<ToolRunner> runner_;
};

// 20 rounds of 50 edits of one file in one batch. Every edit that reports
// success is in the file; the successes form one chain of versions
// (previous_sha256 -> sha256) from the initial content to the final file, so
// no write was made from content another write had already replaced.
TEST_F(ConcurrentWritesTest, FiftyEditsOfOneFileInOneBatchAllApply) {
  constexpr int kRounds = 20;
  int lost = 0, failed = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::string initial = Slots(kEdits);
    t_.Write("f.txt", initial);
    std::vector<ToolCallResult> results = EditBatch(kEdits);
    const std::string final_content = t_.Read("f.txt");
    Versions next;
    int chain_breaks = 0;
    for (int i = 0; i < kEdits; ++i) {
      const ToolCallResult& r = results[i];
      if (!r.ok()) {
        ++failed;
        EXPECT_FALSE(r.error_message.empty()) << "edit " << i << " failed without a reason";
        ADD_FAILURE() << "edit " << i << " failed: " << r.error_message;
        continue;
      }
      EXPECT_TRUE(testing::Flag(r.payload, "written")) << i;
      if (!absl::StrContains(final_content, Slot(i, "new"))) ++lost;
      if (!next.emplace(Str(r.payload, "previous_sha256"), Str(r.payload, "sha256")).second) {
        ++chain_breaks;  // two writes made from the same version
      }
    }
    EXPECT_EQ(chain_breaks, 0) << "round " << round;
    // The chain from the initial version takes every write and ends at the file.
    auto [end, steps] = Follow(next, fs::Sha256Hex(initial));
    EXPECT_EQ(steps, next.size()) << "round " << round;
    EXPECT_EQ(end, fs::Sha256Hex(final_content)) << "round " << round;
  }
  std::cout << "lost updates over " << kRounds << " rounds of " << kEdits
            << " edits: " << lost << " (edits that failed: " << failed << ")\n";
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(t_.Read("f.txt"), [] {
    std::string all;
    for (int i = 0; i < kEdits; ++i) all += Slot(i, "new");
    return all;
  }());
}

// Edits that all name the same expected_sha256: the first to write wins; every
// other one is refused, saying the file changed since it was read.
TEST_F(ConcurrentWritesTest, SameExpectedShaExactlyOneApplies) {
  struct Case {
    int edits, rounds;
  };
  for (Case c : {Case{2, 40}, Case{kEdits, 5}}) {
    int rounds_more_than_one = 0, rounds_none = 0;
    for (int round = 0; round < c.rounds; ++round) {
      const std::string initial = Slots(c.edits);
      t_.Write("f.txt", initial);
      std::vector<ToolCallResult> results = EditBatch(c.edits, fs::Sha256Hex(initial));
      const std::string final_content = t_.Read("f.txt");
      int ok = 0;
      for (int i = 0; i < c.edits; ++i) {
        const ToolCallResult& r = results[i];
        if (r.ok()) {
          ++ok;
          EXPECT_THAT(final_content, HasSubstr(Slot(i, "new")));
          EXPECT_EQ(Str(r.payload, "sha256"), fs::Sha256Hex(final_content));
        } else {
          EXPECT_EQ(r.error->code, ErrorCode::kToolFailed);
          EXPECT_THAT(r.error_message, HasSubstr("file changed since read")) << r.error_message;
          EXPECT_THAT(final_content, HasSubstr(Slot(i, "old")));
        }
      }
      if (ok > 1) ++rounds_more_than_one;
      if (ok == 0) ++rounds_none;
    }
    std::cout << "edits of one version, " << c.edits << " per round: rounds where more than one "
              << "applied: " << rounds_more_than_one << " of " << c.rounds
              << ", where none did: " << rounds_none << "\n";
    EXPECT_EQ(rounds_more_than_one, 0);
    EXPECT_EQ(rounds_none, 0);
  }
}

// create_file (overwrite) in the middle of a batch of edits of the same file:
// the edits before it form one chain of versions from the initial content,
// the create_file starts a new version, and the edits after it chain from
// that version to the final file. A create_file interleaved with an edit's
// read and write would break one of the chains.
TEST_F(ConcurrentWritesTest, CreateAndEditsOfOneFileSerialize) {
  const std::string created = "created\n" + Slots(kEdits);
  for (int round = 0; round < 10; ++round) {
    const std::string initial = Slots(kEdits);
    t_.Write("f.txt", initial);
    BatchRequest req;
    for (int i = 0; i < kEdits; ++i) {
      req.calls.push_back(
          CallRequest{.id = absl::StrCat(i), .name = "edit_file", .args_json = EditArgs(i, "")});
      if (i == kEdits / 2) {
        req.calls.push_back(CallRequest{
            .id = "create",
            .name = "create_file",
            .args_json = absl::StrCat(R"({"file_path":"f.txt","overwrite":true,"contents":)",
                                      Quoted(created), "}")});
      }
    }
    auto results = runner_->Run(std::move(req));
    ASSERT_TRUE(results.ok());
    Versions next;
    for (const ToolCallResult& r : *results) {
      ASSERT_TRUE(r.ok()) << r.id << ": " << r.error_message;
      if (r.name != "edit_file") continue;
      EXPECT_TRUE(next.emplace(Str(r.payload, "previous_sha256"), Str(r.payload, "sha256")).second)
          << "round " << round << ": two writes made from the same version";
    }
    auto before = Follow(next, fs::Sha256Hex(initial));
    auto after = Follow(next, fs::Sha256Hex(created));
    EXPECT_EQ(before.second + after.second, next.size()) << "round " << round;
    EXPECT_EQ(after.first, fs::Sha256Hex(t_.Read("f.txt"))) << "round " << round;
  }
}

// Edits that build on each other, in one batch: edit i turns "step i" into
// "step i+1", so each applies only to what the one before it wrote. Calls that
// write one file run in call order, so all five apply, whatever spelling of
// the path each uses.
TEST_F(ConcurrentWritesTest, DependentEditsOfOneFileApplyInCallOrder) {
  const char* spellings[] = {"f.txt", "./f.txt", "f.txt", ".//f.txt", "././f.txt"};
  int broke = RoundsWhereTheChainBroke(30, 5, "f.txt", [&](int i) {
    return CallRequest{.id = absl::StrCat(i),
                       .name = "edit_file",
                       .args_json = absl::StrCat(R"({"file_path":")", spellings[i],
                                                 R"(","edits":[{"old_string":"step )", i,
                                                 R"(","new_string":"step )", i + 1, R"("}]})")};
  });
  EXPECT_EQ(broke, 0) << "rounds (of 30) where the chain of edits did not all apply";
}

// The text editor tool and apply_patch declare the files they write too: a
// chain of str_replace edits and patches of one file in one batch all apply,
// in call order.
TEST_F(ConcurrentWritesTest, EditorAndPatchEditsOfOneFileApplyInCallOrder) {
  int broke = RoundsWhereTheChainBroke(20, 6, "g.txt", [](int i) {
    std::string from = absl::StrCat("step ", i), to = absl::StrCat("step ", i + 1);
    if (i % 2 == 0) {
      return CallRequest{
          .id = absl::StrCat(i),
          .name = "str_replace_based_edit_tool",
          .args_json = absl::StrCat(R"({"command":"str_replace","path":"g.txt","old_str":")",
                                    from, R"(","new_str":")", to, R"("})")};
    }
    return CallRequest{.id = absl::StrCat(i),
                       .name = "apply_patch",
                       .args_json = absl::StrCat(
                           R"({"input":"*** Begin Patch\n*** Update File: ./g.txt\n@@\n-)",
                           from, R"(\n+)", to, R"(\n*** End Patch\n"})")};
  });
  EXPECT_EQ(broke, 0) << "rounds (of 20) where the chain of edits did not all apply";
}

// create_file, then edits of the file it creates, in one batch: each runs
// after the one before it.
TEST_F(ConcurrentWritesTest, CreateThenEditInOneBatchRunInCallOrder) {
  for (int round = 0; round < 20; ++round) {
    std::filesystem::remove(t_.Abs("n.txt"));
    BatchRequest req;
    req.calls.push_back(CallRequest{.id = "create",
                                    .name = "create_file",
                                    .args_json = R"({"file_path":"n.txt","contents":"one\n"})"});
    req.calls.push_back(CallRequest{
        .id = "edit1",
        .name = "edit_file",
        .args_json = R"({"file_path":"n.txt","edits":[{"old_string":"one","new_string":"two"}]})"});
    req.calls.push_back(CallRequest{
        .id = "edit2",
        .name = "edit_file",
        .args_json =
            R"({"file_path":"n.txt","edits":[{"old_string":"two","new_string":"three"}]})"});
    auto results = runner_->Run(std::move(req));
    ASSERT_TRUE(results.ok());
    for (const ToolCallResult& r : *results) {
      ASSERT_TRUE(r.ok()) << "round " << round << ", " << r.id << ": " << r.error_message;
    }
    ASSERT_EQ(t_.Read("n.txt"), "three\n") << "round " << round;
  }
}

// edit_file and create_file wait for the file's writer lock, whatever path
// names the file (here through a symlinked directory). An edit that no longer
// applies once it gets the lock says that another write ran just before it.
TEST_F(ConcurrentWritesTest, WritersWaitForTheLockThroughAnyPath) {
  t_.Mkdir("d");
  t_.Symlink("alias", "d");
  const std::string v1 = "version 1\n";
  t_.Write("d/f", v1);
  fs::UniqueFd dir(open(t_.Abs("d").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir.valid());
  CancellationToken never;
  auto held = fs::FileWriteLock::Acquire(dir.get(), "f", never, "d/f");
  ASSERT_TRUE(held.ok());

  absl::Notification edited, created;
  std::optional<ToolCallResult> edit, create;
  std::thread edit_thread([&] {
    edit = testing::RunOneCall(
        *runner_, "edit_file",
        absl::StrCat(R"({"file_path":"alias/f","expected_sha256":")", fs::Sha256Hex(v1),
                     R"(","edits":[{"old_string":"version","new_string":"edit"}]})"));
    edited.Notify();
  });
  std::thread create_thread([&] {
    create = testing::RunOneCall(
        *runner_, "create_file", R"({"file_path":"d/../alias/g/../f","overwrite":true,"contents":"created\n"})");
    created.Notify();
  });
  // Both wait for the holder (a generous bound: they get there at once).
  for (int i = 0; i < 30000 && fs::FileWriteLock::UsersForTesting(dir.get(), "f") < 3; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(fs::FileWriteLock::UsersForTesting(dir.get(), "f"), 3);
  EXPECT_FALSE(edited.HasBeenNotified());
  EXPECT_FALSE(created.HasBeenNotified());
  t_.Write("d/f", "version 2\n");  // what the holder wrote
  { fs::FileWriteLock release = std::move(*held); }
  edit_thread.join();
  create_thread.join();
  ASSERT_TRUE(create->ok()) << create->error_message;
  ASSERT_FALSE(edit->ok());
  EXPECT_THAT(edit->error_message, HasSubstr("file changed since read"));
  EXPECT_THAT(edit->error_message,
              HasSubstr("(another write of 'alias/f' finished just before this edit)"));
  EXPECT_EQ(t_.Read("d/f"), "created\n");
  EXPECT_EQ(fs::FileWriteLock::KeysInUse(), 0u);
}

}  // namespace
}  // namespace toolexec
