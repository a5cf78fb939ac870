// apply_patch against OpenAI codex's apply_patch scenario suite
// (codex-rs/apply-patch/tests/fixtures/scenarios): each scenario is a folder
// with input/ (the tree before), patch.txt and expected/ (the exact tree
// after: every directory, every file's bytes). The suite is read from the
// oracles folder beside the repository (TOOLEXEC_ORACLES_DIR, from the
// environment or CMake), not copied into it; where it is absent each test is
// skipped saying so.
//
// One intended difference: a patch that fails part-way. codex keeps the
// operations before the failing one (scenario 015 expects them); toolexec
// applies a patch whole or not at all, so there the tree must be exactly
// input/ afterwards.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/files/file_tools.h"

namespace toolexec {
namespace {

namespace stdfs = std::filesystem;

stdfs::path ScenariosDir() {
  const char* env = std::getenv("TOOLEXEC_ORACLES_DIR");
  std::string base = env != nullptr && *env != '\0' ? env : TOOLEXEC_ORACLES_DIR;
  return stdfs::path(base) / "codex-apply-patch";
}

// The scenario folders, sorted; a single "absent" entry when the suite is
// not there, so the test says so instead of vanishing.
std::vector<std::string> ScenarioNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(ScenariosDir(), ec)) {
    if (e.is_directory() && stdfs::exists(e.path() / "patch.txt")) {
      names.push_back(e.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) names.push_back("absent");
  return names;
}

std::string ReadAll(const stdfs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every directory ("d/") and file (with its bytes) under `root`.
std::map<std::string, std::string> Snapshot(const stdfs::path& root) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  if (!stdfs::exists(root, ec)) return out;
  for (auto it = stdfs::recursive_directory_iterator(root, ec);
       !ec && it != stdfs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(root).string();
    if (it->is_directory()) {
      out[rel + "/"] = "";
    } else {
      out[rel] = ReadAll(it->path());
    }
  }
  return out;
}

std::string Describe(const std::map<std::string, std::string>& tree) {
  std::string out;
  for (const auto& [path, bytes] : tree) absl::StrAppend(&out, path, " = ", testing::Quoted(bytes), "\n");
  return out;
}

class CodexApplyPatchScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(CodexApplyPatchScenario, LeavesTheExpectedTree) {
  if (GetParam() == "absent") {
    GTEST_SKIP() << "codex's apply_patch scenarios are not at " << ScenariosDir()
                 << " (set TOOLEXEC_ORACLES_DIR to the folder that holds codex-apply-patch/)";
  }
  const stdfs::path dir = ScenariosDir() / GetParam();
  testing::TempTree tree;
  if (stdfs::exists(dir / "input")) {
    stdfs::copy(dir / "input", tree.path(), stdfs::copy_options::recursive);
  }
  const std::string patch = ReadAll(dir / "patch.txt");
  BuiltinOptions options;
  builtin::ApplyPatchTool tool(options);
  auto result =
      testing::CallTool(tool, absl::StrCat(R"({"input":)", testing::Quoted(patch), "}"),
                        std::vector<std::string>{tree.path()});
  // All or nothing: where codex keeps a failed patch's earlier operations,
  // toolexec leaves the tree as it was.
  const bool partial = GetParam() == "015_failure_after_partial_success_leaves_changes";
  const auto want = Snapshot(partial ? dir / "input" : dir / "expected");
  const auto got = Snapshot(tree.path());
  EXPECT_EQ(got, want) << "patch:\n" << patch << "\nresult: "
                       << (result.ok() ? ToJsonString(*result) : result.status().ToString())
                       << "\ngot:\n" << Describe(got) << "want:\n" << Describe(want);
  if (partial) {
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.status().message().find("nothing was changed"), std::string::npos)
        << result.status();
  }
  // A patch either applied (the tree changed as expected) or failed saying
  // nothing was changed; never a failure that changed something.
  if (!result.ok()) {
    EXPECT_EQ(got, Snapshot(dir / "input")) << result.status();
  }
}

INSTANTIATE_TEST_SUITE_P(Codex, CodexApplyPatchScenario, ::testing::ValuesIn(ScenarioNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace toolexec
