// The official JSON-Schema-Test-Suite (draft 7, tests/data/JSON-Schema-Test-Suite,
// vendored with its license) through the runtime's schema API: every case
// must agree with the suite, except the ones listed in kExceptions, each with
// its reason. An exception that starts agreeing fails the test too, so the
// list stays exact.
#include <dirent.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/runtime/json.h"
#include "tools/runtime/schema.h"

namespace toolexec {
namespace {

// Where toolexec and the suite differ, on purpose or by a known limit.
// An empty `group` or `test`: all of them.
struct Exception {
  const char* file;
  const char* group;
  const char* test;
  const char* reason;
};

// Every one but the last is a schema refused at registration with valijson's
// reason, never a value judged wrongly.
constexpr char kRemote[] =
    "a remote reference: toolexec never fetches a schema (a schema from outside must not make "
    "the daemon fetch URLs), so valijson refuses it";
constexpr char kBaseUri[] =
    "a reference relative to an \"$id\" base URI: valijson 1.0 resolves it as a remote document "
    "(see kRemote)";

const Exception kExceptions[] = {
    {"refRemote.json", "", "", kRemote},
    {"definitions.json", "validate definition against metaschema", "",
     "refers to the draft-07 metaschema by its URL (see kRemote)"},
    {"ref.json", "remote ref, containing refs itself", "", kRemote},
    {"ref.json", "$ref prevents a sibling $id from changing the base uri", "", kBaseUri},
    {"ref.json", "$id must be resolved against nearest parent, not just immediate parent", "",
     kBaseUri},
    {"ref.json", "Location-independent identifier with base URI change in subschema", "",
     kBaseUri},
    {"ref.json", "Recursive references between schemas", "", kBaseUri},
    {"ref.json", "Reference an anchor with a non-relative URI", "", kBaseUri},
    {"ref.json", "URN base URI with URN and JSON pointer ref", "", kBaseUri},
    {"ref.json", "URN base URI with URN and anchor ref", "", kBaseUri},
    {"ref.json", "simple URN base URI with $ref via the URN", "", kBaseUri},
    {"ref.json", "ref to if", "", kBaseUri},
    {"ref.json", "ref to then", "", kBaseUri},
    {"ref.json", "ref to else", "", kBaseUri},
    {"ref.json", "ref with absolute-path-reference", "", kBaseUri},
    {"ref.json", "refs with relative uris and defs", "", kBaseUri},
    {"ref.json", "relative refs with absolute uris and defs", "", kBaseUri},
    {"ref.json", "Location-independent identifier", "",
     "a plain-name fragment (\"#foo\" naming an \"$id\"): valijson 1.0 reads only JSON pointers"},
    {"ref.json", "empty tokens in $ref json-pointer", "",
     "a JSON pointer with an empty token (\"#/definitions//x\"): valijson 1.0 refuses it"},
    {"multipleOf.json", "small multiple of large integer", "any integer is a multiple of 1e-8",
     "valijson divides in double precision: 12391239123 / 1e-8 leaves a rounding remainder"},
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> SuiteFiles() {
  std::vector<std::string> files;
  DIR* dir = opendir(TOOLEXEC_SCHEMA_SUITE_DIR);
  if (dir == nullptr) return files;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (absl::EndsWith(name, ".json")) files.push_back(name);
  }
  closedir(dir);
  std::sort(files.begin(), files.end());
  return files;
}

std::string Str(const JsonValue& object, const char* key) {
  auto it = object.FindMember(key);
  return it != object.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

TEST(JsonSchemaTestSuite, Draft7AgreesOutsideTheDocumentedExceptions) {
  std::vector<std::string> files = SuiteFiles();
  ASSERT_GE(files.size(), 30u) << "suite not found in " << TOOLEXEC_SCHEMA_SUITE_DIR;
  std::vector<bool> exception_used(std::size(kExceptions), false);
  std::vector<std::string> disagreements;
  int cases = 0;
  int agreed = 0;
  int excepted = 0;
  for (const std::string& file : files) {
    auto doc = ParseJson(ReadFile(absl::StrCat(TOOLEXEC_SCHEMA_SUITE_DIR, "/", file)), 1000);
    ASSERT_TRUE(doc.ok()) << file << ": " << doc.status();
    for (const JsonValue& group : doc->GetArray()) {
      std::string group_name = Str(group, "description");
      auto schema = CompiledSchema::CompileForValue(ToJsonString(group["schema"]), "value");
      for (const JsonValue& test : group["tests"].GetArray()) {
        std::string test_name = Str(test, "description");
        bool expected = test["valid"].GetBool();
        std::string outcome;
        if (!schema.ok()) {
          outcome = absl::StrCat("schema refused: ", schema.status().message());
        } else {
          absl::Status s = (*schema)->Validate(test["data"]);
          if (s.ok() != expected) outcome = s.ok() ? "accepted" : std::string(s.message());
        }
        ++cases;
        int exception = -1;
        for (size_t i = 0; i < std::size(kExceptions); ++i) {
          const Exception& e = kExceptions[i];
          if (file == e.file && (*e.group == 0 || group_name == e.group) &&
              (*e.test == 0 || test_name == e.test)) {
            exception = static_cast<int>(i);
          }
        }
        if (outcome.empty()) {
          ++agreed;
          if (exception >= 0 && *kExceptions[exception].test != 0) {
            disagreements.push_back(absl::StrCat("listed as an exception but agrees: ", file,
                                                 " / ", group_name, " / ", test_name));
          }
        } else if (exception >= 0) {
          ++excepted;
          exception_used[exception] = true;
        } else {
          disagreements.push_back(absl::StrCat(file, " / ", group_name, " / ", test_name,
                                               " (valid: ", expected, "): ", outcome));
        }
      }
    }
  }
  for (size_t i = 0; i < std::size(kExceptions); ++i) {
    if (!exception_used[i]) {
      disagreements.push_back(absl::StrCat("exception never needed: ", kExceptions[i].file, " / ",
                                           kExceptions[i].group));
    }
  }
  std::cout << "JSON-Schema-Test-Suite draft 7: " << agreed << " of " << cases
            << " cases agree; " << excepted << " are documented exceptions\n";
  EXPECT_THAT(disagreements, ::testing::IsEmpty()) << absl::StrJoin(disagreements, "\n");
  EXPECT_EQ(agreed + excepted, cases);
}

}  // namespace
}  // namespace toolexec
