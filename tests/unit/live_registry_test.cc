// The registry as it changes at runtime (LiveToolRegistry): snapshots,
// their order, names that collide, and what a holder of a snapshot keeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "tests/common/test_tools.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakeTool;

absl::StatusOr<Json> Nothing(const JsonValue&, ToolContext&) { return Json(); }

std::vector<std::shared_ptr<Tool>> Tools(std::initializer_list<const char*> names) {
  std::vector<std::shared_ptr<Tool>> out;
  for (const char* n : names) out.push_back(MakeTool(n, Nothing));
  return out;
}

// Built-ins "alpha" and "beta"; two dynamic sources.
std::unique_ptr<LiveToolRegistry> TwoSources() {
  ToolRegistry fixed;
  EXPECT_TRUE(fixed.Register(MakeTool("alpha", Nothing), "built-in").ok());
  EXPECT_TRUE(fixed.Register(MakeTool("beta", Nothing), "built-in").ok());
  return std::make_unique<LiveToolRegistry>(
      std::move(fixed), std::vector<std::string>{"MCP server 'one'", "MCP server 'two'"});
}

TEST(LiveRegistryTest, FixedToolsFirstThenEachSourceInOrder) {
  auto live = TwoSources();
  const uint64_t start = live->Snapshot()->generation();
  ASSERT_TRUE(live->Publish(1, Tools({"y"}), false).ok());
  ASSERT_TRUE(live->Publish(0, Tools({"x", "w"}), false).ok());
  auto snap = live->Snapshot();
  EXPECT_THAT(snap->names(), ElementsAre("alpha", "beta", "x", "w", "y"));
  EXPECT_EQ(snap->generation(), start + 2);
  EXPECT_EQ(snap->Find("w")->position, 3u);
  EXPECT_EQ(snap->Find("y")->source, "MCP server 'two'");
  // A new list replaces the source's tools as a whole, in its own order.
  ASSERT_TRUE(live->Publish(0, Tools({"v"}), false).ok());
  EXPECT_THAT(live->Snapshot()->names(), ElementsAre("alpha", "beta", "v", "y"));
  EXPECT_THAT(snap->names(), ElementsAre("alpha", "beta", "x", "w", "y"));  // unchanged
  EXPECT_EQ(live->Publish(2, Tools({"z"}), false).code(), absl::StatusCode::kOutOfRange);
}

TEST(LiveRegistryTest, RemovedToolStaysValidForTheHolderOfASnapshot) {
  auto live = TwoSources();
  std::shared_ptr<Tool> tool = MakeTool("answer", [](const JsonValue&, ToolContext&) {
    return absl::StatusOr<Json>(testing::J("42"));
  });
  std::weak_ptr<Tool> alive = tool;
  ASSERT_TRUE(live->Publish(0, {std::move(tool)}, false).ok());
  std::shared_ptr<const ToolRegistry> held = live->Snapshot();
  const RegisteredTool* entry = held->Find("answer");
  ASSERT_NE(entry, nullptr);
  ASSERT_TRUE(live->Publish(0, {}, false).ok());
  EXPECT_EQ(live->Snapshot()->Find("answer"), nullptr);
  ASSERT_FALSE(alive.expired());
  EXPECT_EQ(entry->name, "answer");
  EXPECT_EQ(entry->schema->document().IsObject(), true);
  held.reset();
  EXPECT_TRUE(alive.expired());  // freed with the last snapshot listing it
}

TEST(LiveRegistryTest, AtStartUpATakenNameIsTheDuplicateErrorAndNothingChanges) {
  auto live = TwoSources();
  const uint64_t before = live->Snapshot()->generation();
  absl::Status s = live->Publish(0, Tools({"ok", "beta"}), /*strict=*/true);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("'beta'"), HasSubstr("built-in"),
                                 HasSubstr("MCP server 'one'")));
  EXPECT_EQ(live->Snapshot()->generation(), before);
  EXPECT_EQ(live->Snapshot()->Find("ok"), nullptr);
}

TEST(LiveRegistryTest, LaterATakenNameIsRefusedNamingBothSourcesAndTheRestServe) {
  auto live = TwoSources();
  ASSERT_TRUE(live->Publish(0, Tools({"shared"}), false).ok());
  ASSERT_TRUE(live->Publish(1, Tools({"alpha", "shared", "own", "bad name"}), false).ok());
  auto snap = live->Snapshot();
  EXPECT_THAT(snap->names(), ElementsAre("alpha", "beta", "shared", "own"));
  EXPECT_EQ(snap->Find("alpha")->source, "built-in");
  EXPECT_EQ(snap->Find("shared")->source, "MCP server 'one'");
  EXPECT_THAT(live->Refused(0), IsEmpty());
  std::vector<std::string> refused = live->Refused(1);
  ASSERT_EQ(refused.size(), 3u);
  EXPECT_THAT(refused[0], AllOf(HasSubstr("'alpha'"), HasSubstr("built-in"),
                                HasSubstr("MCP server 'two'")));
  EXPECT_THAT(refused[1], AllOf(HasSubstr("'shared'"), HasSubstr("MCP server 'one'"),
                                HasSubstr("MCP server 'two'")));
  EXPECT_THAT(refused[2], HasSubstr("bad name"));
  // Once the holder lets the name go, the other source's tool gets it.
  ASSERT_TRUE(live->Publish(0, {}, false).ok());
  EXPECT_THAT(live->Snapshot()->names(), ElementsAre("alpha", "beta", "shared", "own"));
  EXPECT_EQ(live->Snapshot()->Find("shared")->source, "MCP server 'two'");
  EXPECT_EQ(live->Refused(1).size(), 2u);
}

TEST(LiveRegistryTest, TheToolHoldingANameKeepsItWhateverTheSourceOrder) {
  auto live = TwoSources();
  ASSERT_TRUE(live->Publish(1, Tools({"shared"}), false).ok());
  ASSERT_TRUE(live->Publish(0, Tools({"shared"}), false).ok());
  EXPECT_EQ(live->Snapshot()->Find("shared")->source, "MCP server 'two'");
  EXPECT_EQ(live->Refused(0).size(), 1u);
  // Another listing of the holder does not hand the name over either.
  ASSERT_TRUE(live->Publish(1, Tools({"shared", "more"}), false).ok());
  EXPECT_EQ(live->Snapshot()->Find("shared")->source, "MCP server 'two'");
}

// Readers never see a half-published list: the two tools of a listing come
// and go together, fixed tools stay first, generations never go back, and a
// snapshot's entries stay callable while it is held.
TEST(LiveRegistryTest, ConcurrentReadersWhilePublishing) {
  auto live = TwoSources();
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&] {
      uint64_t last = 0;
      while (!stop.load()) {
        std::shared_ptr<const ToolRegistry> snap = live->Snapshot();
        bool p1 = snap->Find("p1") != nullptr;
        bool p2 = snap->Find("p2") != nullptr;
        if (p1 != p2 || snap->generation() < last || snap->tools()[0]->name != "alpha" ||
            snap->size() != (p1 ? 4u : 2u)) {
          ++errors;
        }
        for (const auto& t : snap->tools()) {
          if (snap->Find(t->name) != t.get() || t->tool->name() != t->name) ++errors;
        }
        last = snap->generation();
      }
    });
  }
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(live->Publish(0, i % 2 == 0 ? Tools({"p1", "p2"}) : Tools({}), false).ok());
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(live->Snapshot()->generation(), 2000u);
}

// A batch uses the snapshot it started with: a tool removed while its call
// runs completes that call; a batch started after the removal does not know
// the tool, and says which tools come close.
TEST(LiveRegistryTest, ACallRunningWhenItsToolIsRemovedCompletes) {
  auto live = TwoSources();
  absl::Notification started, release;
  ASSERT_TRUE(live->Publish(0,
                            {MakeTool("gadget",
                                      [&](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
                                        started.Notify();
                                        release.WaitForNotification();
                                        return testing::J(R"({"done":true})");
                                      })},
                            false)
                  .ok());
  std::shared_ptr<const ToolRegistry> initial = live->Snapshot();  // outlives the runner
  ToolRunner runner(initial.get(), {});
  testing::Collector running;
  BatchRequest first;
  first.tools = live->Snapshot();
  first.calls.push_back(testing::Call("gadget", "gadget"));
  ASSERT_TRUE(runner.Start(std::move(first), &running).ok());
  started.WaitForNotification();
  ASSERT_TRUE(live->Publish(0, Tools({"gadgets"}), false).ok());
  testing::Collector after;
  BatchRequest second;
  second.tools = live->Snapshot();
  second.calls.push_back(testing::Call("gadget", "gadget"));
  ASSERT_TRUE(runner.Start(std::move(second), &after).ok());
  after.Wait();
  ASSERT_EQ(after.results.size(), 1u);
  EXPECT_EQ(after.results[0].error->code, ErrorCode::kUnknownTool);
  EXPECT_THAT(after.results[0].error_message,
              AllOf(HasSubstr("unknown tool 'gadget'"), HasSubstr("did you mean gadgets")));
  release.Notify();
  running.Wait();
  ASSERT_EQ(running.results.size(), 1u);
  EXPECT_TRUE(running.results[0].ok()) << running.results[0].error_message;
}

// A session opened with a tool its MCP server has since removed: a call of
// it is an unknown tool, and the suggestions are the session's tools that
// exist now (never the removed name itself).
TEST(LiveRegistryTest, ASessionsRemovedToolIsUnknownAndNotSuggested) {
  auto live = TwoSources();
  ASSERT_TRUE(live->Publish(0, Tools({"gadget", "gadgets"}), false).ok());
  SessionManager sessions(live.get(), {});
  SessionOptions options;
  options.tools = {"alpha", "gadget", "gadgets"};
  auto session = sessions.Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE(live->Publish(0, Tools({"gadgets"}), false).ok());
  std::shared_ptr<const ToolRegistry> initial = live->Snapshot();
  ToolRunner runner(initial.get(), {});
  BatchRequest batch;
  batch.tools = live->Snapshot();
  batch.session = *session;
  batch.calls.push_back(testing::Call("gadget", "gadget"));
  auto results = runner.Run(std::move(batch));
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 1u);
  EXPECT_EQ((*results)[0].error->code, ErrorCode::kUnknownTool);
  EXPECT_EQ((*results)[0].error_message, "unknown tool 'gadget'; did you mean gadgets?");
}

// What a session chose is applied to the tools registered when it calls: a
// tool published after it opened is callable under a disabled list and under
// a tool set it belongs to, and not under a list of names.
TEST(LiveRegistryTest, ASessionsChoiceAppliesToToolsPublishedLater) {
  auto live = TwoSources();
  SessionManager sessions(live.get(), {});
  auto open = [&](ToolSelection selection) {
    SessionOptions options;
    options.selections.push_back(std::move(selection));
    auto session = sessions.Open(std::move(options));
    EXPECT_TRUE(session.ok()) << session.status();
    return *session;
  };
  std::shared_ptr<Session> all_but_beta = open(
      *ToolSelection::Create(*live->Snapshot(), {}, {"beta"}, "test"));
  std::shared_ptr<Session> read_only = open(
      *ToolSelection::Create(*live->Snapshot(), {"read_only"}, {}, "test"));
  std::shared_ptr<Session> only_alpha = open(
      *ToolSelection::Create(*live->Snapshot(), {"alpha"}, {}, "test"));
  ToolSpec spec("gadget", "a read-only tool an MCP server adds", testing::kAnyObject);
  spec.Tags({kTagReadOnly});
  ASSERT_TRUE(live->Publish(0, {std::make_shared<testing::FnTool>(std::move(spec), Nothing)}, false)
                  .ok());
  std::shared_ptr<const ToolRegistry> now = live->Snapshot();
  const RegisteredTool* gadget = now->Find("gadget");
  ASSERT_NE(gadget, nullptr);
  EXPECT_TRUE(all_but_beta->AllowsTool(*gadget));
  EXPECT_TRUE(read_only->AllowsTool(*gadget));
  EXPECT_FALSE(only_alpha->AllowsTool(*gadget));
  EXPECT_EQ(all_but_beta->ToolNames(*now), (std::vector<std::string>{"alpha", "gadget"}));
  EXPECT_EQ(only_alpha->ToolNames(*now), std::vector<std::string>{"alpha"});
  // A list of tool names is names only: a tool may be called like a set.
  EXPECT_FALSE(ToolSelection::Only({"all"}).Chooses(*gadget));

  ToolRunner runner(now.get(), {});
  BatchRequest batch;
  batch.tools = now;
  batch.session = all_but_beta;
  batch.calls.push_back(testing::Call("1", "gadget"));
  batch.calls.push_back(testing::Call("2", "beta"));
  auto results = runner.Run(std::move(batch));
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_TRUE((*results)[0].ok()) << (*results)[0].error_message;
  EXPECT_EQ((*results)[1].error->code, ErrorCode::kDenied);
  EXPECT_THAT((*results)[1].error_message, HasSubstr("its tools are: alpha, gadget"));
}

}  // namespace
}  // namespace toolexec
