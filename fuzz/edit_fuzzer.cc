// Fuzzes the edit engine (tools/files/edit_engine.h) through the tools that
// use it, on a fuzzed file: str_replace_based_edit_tool's str_replace and
// insert, edit_file, and apply_patch (whose patch parser and hunk search run
// on the fuzzed patch). Each input gets a fresh workspace holding f.txt (the
// fuzzed bytes) and g.txt.
// Input: one byte choosing the operation, then NUL-separated parts:
//   0 str_replace: <file>\0<old_str>\0<new_str>
//   1 insert:      <file>\0<insert_line as text>\0<new_str>
//   2 edit_file:   <file>\0<old_string>\0<new_string>   (replace_all from bit 3)
//   3 apply_patch: <file>\0<patch>
// Checks beyond "no crash": a replacement that succeeds on a plain file
// (no BOM, no CR) whose old text occurs exactly once leaves exactly the
// expected bytes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/files/edit_engine.h"
#include "tools/files/file_tools.h"

namespace {

using toolexec::testing::CallTool;
using toolexec::testing::Quoted;
using toolexec::testing::TempTree;

struct Tools {
  toolexec::BuiltinOptions options;
  toolexec::builtin::StrReplaceBasedEditTool str_replace{options};
  toolexec::builtin::EditFileTool edit_file{options};
  toolexec::builtin::ApplyPatchTool apply_patch{options};
};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

size_t Count(absl::string_view text, absl::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != absl::string_view::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static Tools* tools = new Tools();
  const uint8_t op = data[0];
  std::vector<std::string> parts = absl::StrSplit(
      absl::string_view(reinterpret_cast<const char*>(data + 1), size - 1), absl::MaxSplits('\0', 2));
  parts.resize(3);
  const std::string& file = parts[0];

  TempTree tree;
  tree.Write("f.txt", file);
  tree.Write("g.txt", "one\ntwo\nthree\n");
  std::string args;
  const toolexec::Tool* tool = nullptr;
  switch (op & 3) {
    case 0:
      tool = &tools->str_replace;
      args = absl::StrCat(R"({"command":"str_replace","path":"f.txt","old_str":)", Quoted(parts[1]),
                          R"(,"new_str":)", Quoted(parts[2]), "}");
      break;
    case 1:
      tool = &tools->str_replace;
      args = absl::StrCat(R"({"command":"insert","path":"f.txt","insert_line":)", Quoted(parts[1]),
                          R"(,"new_str":)", Quoted(parts[2]), "}");
      break;
    case 2:
      tool = &tools->edit_file;
      args = absl::StrCat(R"({"file_path":"f.txt","edits":[{"old_string":)", Quoted(parts[1]),
                          R"(,"new_string":)", Quoted(parts[2]),
                          R"(,"replace_all":)", (op & 8) ? "true" : "false", "}]}");
      break;
    default:
      tool = &tools->apply_patch;
      args = absl::StrCat(R"({"input":)", Quoted(parts[1]), "}");
      break;
  }
  auto result = CallTool(*tool, args, {tree.path()});
  if (!result.ok() || (op & 3) == 1 || (op & 3) == 3) return 0;

  const std::string& old_text = parts[1];
  const bool plain = !absl::StartsWith(file, toolexec::builtin::kUtf8Bom) &&
                     !absl::StrContains(file, '\r') && !absl::StrContains(old_text, '\r') &&
                     !absl::StrContains(parts[2], '\r');
  if (plain && !old_text.empty() && Count(file, old_text) == 1) {
    std::string expected = file;
    expected.replace(expected.find(old_text), old_text.size(), parts[2]);
    const std::string got = tree.Read("f.txt");
    if (got != expected) {
      Fail(absl::StrCat("replacing one occurrence gave the wrong file: expected ",
                        Quoted(expected), ", got ", Quoted(got), " (args ", args, ")"));
    }
  }
  return 0;
}
