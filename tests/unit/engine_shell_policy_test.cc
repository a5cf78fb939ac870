// [Deciding what runs] for the persistent shell through the Engine: bash and shell are judged
// by exactly run_command's rules (a rule naming one of the three judges all),
// and the persistent-state tricks (alias, a function named like an allowed
// command, cd out of the workspace, exported functions, traps) do not carry a
// judged-harmless line into running what a rule forbids.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/engine.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tests/unit/engine_test_util.h"
#include "tools/runtime/json.h"

namespace toolexec {
namespace {


using ::testing::HasSubstr;
using ::testing::Not;
using testing::Quoted;
using testing::Rule;

class EngineShellPolicyTest : public ::testing::Test {
 protected:
  void Start(PolicyOptions policy) {
    EngineOptions options;
    options.workspace = tree_.path();
    options.policy = std::move(policy);
    ToolCatalogueOptions tools;
    tools.builtin.command_kill_grace = absl::Milliseconds(200);
    auto engine = CreateEngine(options, tools);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
    auto session = engine_->OpenSession(caller_, {});
    ASSERT_TRUE(session.ok()) << session.status();
    session_id_ = session->session_id;
  }
  void TearDown() override { engine_.reset(); }

  ToolCallResult Run(const std::string& tool, const std::string& args) {
    BatchSpec spec;
    spec.session_id = session_id_;
    spec.calls.push_back(testing::Call("1", tool, args));
    testing::Collector c;
    auto batch = engine_->StartBatch(caller_, std::move(spec), &c);
    EXPECT_TRUE(batch.ok()) << batch.status();
    c.Wait();
    return std::move(c.results.at(0));
  }
  ToolCallResult Bash(const std::string& line) {
    return Run("bash", absl::StrCat(R"({"command":)", Quoted(line), "}"));
  }
  ToolCallResult Shell(const std::vector<std::string>& lines) {
    std::string args = R"({"commands":[)";
    for (size_t i = 0; i < lines.size(); ++i) absl::StrAppend(&args, i ? "," : "", Quoted(lines[i]));
    return Run("shell", args + "]}");
  }

  static PolicyOptions Commands(std::string tool, PolicyDecision decision, std::string pattern,
                                std::optional<PolicyDecision> default_decision = std::nullopt) {
    PolicyOptions p;
    p.default_decision = default_decision;
    PolicyRuleOptions r = Rule("the rule", std::move(tool), decision);
    r.command_pattern = std::move(pattern);
    p.rules.push_back(std::move(r));
    return p;
  }

  testing::TempTree tree_;
  std::unique_ptr<Engine> engine_;
  CallerIdentity caller_;
  std::string session_id_;
};

TEST_F(EngineShellPolicyTest, ARunCommandRuleJudgesBashAndShell) {
  Start(Commands("run_command", PolicyDecision::kDeny, "rm *"));
  tree_.Write("keep", "k");
  for (const char* line : {"rm keep", "true; \\rm keep", "echo $(rm keep)",
                                  "bash -c 'rm keep'", "x=rm; $x keep"}) {
    auto r = Bash(line);
    EXPECT_EQ(r.status, ResultStatus::kDenied) << line;
    EXPECT_THAT(r.error_message, HasSubstr("rule 'the rule'")) << line;
  }
  auto shell = Shell({"ls", "rm keep"});
  EXPECT_EQ(shell.status, ResultStatus::kDenied);
  EXPECT_TRUE(tree_.Exists("keep"));
  EXPECT_TRUE(Bash("ls keep").ok());
}

TEST_F(EngineShellPolicyTest, ABashRuleJudgesRunCommandToo) {
  Start(Commands("bash", PolicyDecision::kDeny, "rm *"));
  tree_.Write("keep", "k");
  auto r = Run("run_command", R"({"command_line":"rm keep"})");
  EXPECT_EQ(r.status, ResultStatus::kDenied);
  EXPECT_EQ(Shell({"rm keep"}).status, ResultStatus::kDenied);
  EXPECT_TRUE(tree_.Exists("keep"));
}

TEST_F(EngineShellPolicyTest, AnAllowListStillHoldsAcrossCalls) {
  // Only ls and cat may run; nothing else.
  PolicyOptions p = Commands("run_command", PolicyDecision::kAllow, "ls *", PolicyDecision::kDeny);
  PolicyRuleOptions cat = Rule("cat", "run_command", PolicyDecision::kAllow);
  cat.command_pattern = "cat *";
  p.rules.push_back(cat);
  Start(p);
  tree_.Write("keep", "k");
  // Definitions that would change what a later `ls` runs are refused by the
  // line that makes them.
  for (const char* line : {"alias ls=rm", "ls() { rm keep; }", "export PATH=/tmp:$PATH",
                                  "trap 'rm keep' DEBUG", "enable -n cd"}) {
    auto r = Bash(line);
    EXPECT_EQ(r.status, ResultStatus::kDenied) << line << ": " << r.error_message;
  }
  auto ls = Bash("ls keep");
  ASSERT_TRUE(ls.ok()) << ls.error_message;
  EXPECT_EQ(testing::Str(ls.payload, "output"), "keep\n");
  EXPECT_TRUE(tree_.Exists("keep"));
}

TEST_F(EngineShellPolicyTest, WhatALooserPolicyLetAnEarlierCallDefineDoesNotCarryOver) {
  // Nothing is judged by command here, so the definitions run; a later line
  // still runs what it says, not what they made of it.
  Start(PolicyOptions{});
  tree_.Write("keep", "k");
  // (The DEBUG trap runs within the defining call itself: it only leaves a
  // mark there.)
  ASSERT_TRUE(Bash("shopt -s expand_aliases; alias ls='rm -f'; ls() { rm -f keep; }; "
                   "export -f ls; trap 'touch TRAPPED' DEBUG; trap 'rm -f keep' EXIT")
                  .ok());
  ASSERT_TRUE(Bash("rm -f TRAPPED").ok());
  for (const char* line : {"ls keep", "bash -c 'ls keep'"}) {
    auto r = Bash(line);
    ASSERT_TRUE(r.ok()) << line << ": " << r.error_message;
    EXPECT_EQ(testing::Str(r.payload, "output"), "keep\n") << line;
  }
  EXPECT_FALSE(tree_.Exists("TRAPPED"));
  EXPECT_TRUE(tree_.Exists("keep"));
}

TEST_F(EngineShellPolicyTest, APathRuleOnEtcIsNotSidesteppedByTheShellsWorkingDirectory) {
  PolicyOptions p;
  p.rules.push_back(testing::PathRule("no etc", "*", PolicyDecision::kDeny, "etc/**"));
  Start(p);
  auto view = Run("view_file", R"({"file_path":"/etc/passwd"})");
  EXPECT_NE(view.status, ResultStatus::kSuccess);
  auto cd = Bash("cd /etc");
  ASSERT_TRUE(cd.ok()) << cd.error_message;
  EXPECT_THAT(cd.model_content, HasSubstr("outside the workspace"));
  // The next call starts in the workspace, as run_command's always do.
  auto cat = Bash("pwd; cat passwd");
  EXPECT_THAT(testing::Str(cat.payload, "output"), HasSubstr(tree_.path()));
  EXPECT_THAT(testing::Str(cat.payload, "output"), Not(HasSubstr("root:")));
}

}  // namespace
}  // namespace toolexec
