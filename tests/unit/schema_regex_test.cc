// Regular expressions in schemas from outside (MCP servers, command tools):
// wherever a "pattern", "patternProperties" or date format sits and however a
// "$ref" reaches it, a long argument is matched by RE2 (no recursion per
// character, as std::regex has) or the schema is refused when it registers.
// First: it brings valijson (and its RapidJSON settings) with RE2 in place.
#include "tools/runtime/schema_regex.h"
// clang-format off
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/common/test_tools.h"
#include "tools/runtime/schema.h"
#include "valijson/schema.hpp"
#include "valijson/schema_parser.hpp"
#include "valijson/validation_results.hpp"
// clang-format on

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::J;

// Long enough that std::regex's per-character recursion overflows the stack.
constexpr size_t kLong = 50000;

// A schema matching strings of a's and b's, reached from property "s" some way.
struct Position {
  const char* name;
  const char* schema;
};

// "^[ab]*$" is plain RE2 syntax: each position must compile and match with RE2.
const Position kPositions[] = {
    {"ref into an unknown keyword",
     R"({"type":"object","x-lib":{"p":{"type":"string","pattern":"^[ab]*$"}},
         "properties":{"s":{"$ref":"#/x-lib/p"}}})"},
    {"ref into examples",
     R"({"type":"object","examples":[{"type":"string","pattern":"^[ab]*$"}],
         "properties":{"s":{"$ref":"#/examples/0"}}})"},
    {"ref into default",
     R"({"type":"object","default":{"type":"string","pattern":"^[ab]*$"},
         "properties":{"s":{"$ref":"#/default"}}})"},
    {"ref into const",
     R"({"type":"object","properties":{"s":{"$ref":"#/properties/t/const"},
         "t":{"const":{"type":"string","pattern":"^[ab]*$"}}}})"},
    {"ref into enum",
     R"({"type":"object","properties":{"s":{"$ref":"#/properties/t/enum/0"},
         "t":{"enum":[{"type":"string","pattern":"^[ab]*$"}]}}})"},
    {"ref from dependencies into examples",
     R"({"type":"object","examples":[{"type":"string","pattern":"^[ab]*$"}],
         "dependencies":{"s":{"properties":{"s":{"$ref":"#/examples/0"}}}}})"},
    {"ref into nested definitions and an unknown keyword",
     R"({"type":"object","definitions":{"a":{"definitions":{"b":{"x-lib":{
           "p":{"type":"string","pattern":"^[ab]*$"}}}}}},
         "properties":{"s":{"$ref":"#/definitions/a/definitions/b/x-lib/p"}}})"},
    {"chain of refs through default and examples",
     R"({"type":"object","default":{"$ref":"#/examples/0"},
         "examples":[{"type":"string","pattern":"^[ab]*$"}],
         "properties":{"s":{"$ref":"#/default"}}})"},
};

Json WithString(const std::string& key, const std::string& value) {
  Json args = J("{}");
  args.AddMember(JsonValue(key.c_str(), args.GetAllocator()),
                 JsonValue(value.c_str(), args.GetAllocator()), args.GetAllocator());
  return args;
}

TEST(HostileSchemaTest, PatternReachedThroughAnyPositionIsMatchedByRe2) {
  for (const Position& p : kPositions) {
    SCOPED_TRACE(p.name);
    auto schema = CompiledSchema::Compile(p.schema);
    ASSERT_TRUE(schema.ok()) << schema.status();
    Json good = WithString("s", std::string(kLong, 'a'));
    EXPECT_TRUE((*schema)->Prepare(good).ok());
    Json bad = WithString("s", std::string(kLong, 'a') + "c");
    absl::Status s = (*schema)->Prepare(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("args.s"));
    EXPECT_THAT(s.message(), HasSubstr("^[ab]*$"));
  }
}

// RE2 has no lookaround: a pattern valijson would read as a schema, in any
// position, is refused when the tool registers, naming where it is.
TEST(HostileSchemaTest, LookaroundIsRefusedAtRegistrationWhereverARefReachesIt) {
  for (const Position& p : kPositions) {
    SCOPED_TRACE(p.name);
    std::string text = p.schema;
    text.replace(text.find("^[ab]*$"), 7, "^(?=a)[ab]*$");
    auto schema = CompiledSchema::Compile(text);
    ASSERT_FALSE(schema.ok());
    EXPECT_EQ(schema.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(schema.status().message(), HasSubstr("^(?=a)[ab]*$"));
    EXPECT_THAT(schema.status().message(), HasSubstr("not RE2 syntax"));
  }
  // The shape the finish tool's output schema was attacked with.
  auto issue = CompiledSchema::Compile(
      R"({"type":"object","x-lib":{"p":{"type":"string","pattern":"^(?=a)[ab]*$"}},
          "properties":{"s":{"$ref":"#/x-lib/p"}}})");
  ASSERT_FALSE(issue.ok());
  EXPECT_THAT(issue.status().message(), HasSubstr("#/x-lib/p"));
  // A patternProperties key is a pattern too.
  auto key = CompiledSchema::Compile(
      R"js({"type":"object","patternProperties":{"^(?!x)":{"type":"integer"}}})js");
  ASSERT_FALSE(key.ok());
  EXPECT_THAT(key.status().message(), HasSubstr("patternProperties key"));
}

TEST(HostileSchemaTest, PatternPropertiesMatchLongNamesWithRe2) {
  const char* kSchemas[] = {
      R"({"type":"object","patternProperties":{"^[ab]*$":{"type":"integer"}},
          "additionalProperties":false})",
      // Reached through "default", which the schema's own walk never reads.
      R"({"type":"object","default":{"patternProperties":{"^[ab]*$":{"type":"integer"}},
          "additionalProperties":false},"properties":{"o":{"$ref":"#/default"}}})",
  };
  for (const char* text : kSchemas) {
    SCOPED_TRACE(text);
    auto schema = CompiledSchema::Compile(text);
    ASSERT_TRUE(schema.ok()) << schema.status();
    bool nested = std::string(text).find("#/default") != std::string::npos;
    auto args_with = [&](const std::string& name, const char* value) {
      Json object = J(absl::StrCat("{\"", name, "\":", value, "}"));
      if (!nested) return object;
      Json args = J("{}");
      args.AddMember("o", JsonValue(object, args.GetAllocator()), args.GetAllocator());
      return args;
    };
    Json good = args_with(std::string(kLong, 'a'), "1");
    EXPECT_TRUE((*schema)->Prepare(good).ok()) << (*schema)->Prepare(good);
    Json wrong_value = args_with(std::string(kLong, 'a'), "\"x\"");
    EXPECT_FALSE((*schema)->Prepare(wrong_value).ok());
    Json unmatched = args_with(std::string(kLong, 'a') + "c", "1");
    EXPECT_FALSE((*schema)->Prepare(unmatched).ok());
  }
}

TEST(HostileSchemaTest, FormatAndPropertyNamesReachedThroughARef) {
  auto date = CompiledSchema::Compile(
      R"({"type":"object","x-lib":{"d":{"type":"string","format":"date"}},
          "properties":{"d":{"$ref":"#/x-lib/d"}}})");
  ASSERT_TRUE(date.ok()) << date.status();
  Json long_year = WithString("d", std::string(kLong, '1') + "-01-01");
  EXPECT_TRUE((*date)->Prepare(long_year).ok());
  Json not_a_date = WithString("d", std::string(kLong, '1') + "-13-01");
  EXPECT_THAT((*date)->Prepare(not_a_date).message(), HasSubstr("valid date"));

  auto names = CompiledSchema::Compile(
      R"({"type":"object","examples":[{"pattern":"^[ab]*$"}],
          "propertyNames":{"$ref":"#/examples/0"}})");
  ASSERT_TRUE(names.ok()) << names.status();
  Json good = WithString(std::string(kLong, 'a'), "v");
  EXPECT_TRUE((*names)->Prepare(good).ok());
  Json bad = WithString(std::string(kLong, 'a') + "c", "v");
  EXPECT_FALSE((*names)->Prepare(bad).ok());
}

// valijson tells URNs in "$ref" and "id" with std::regex while it parses.
TEST(HostileSchemaTest, OverlongReferencesAreRefusedAtRegistration) {
  for (const char* key : {"$ref", "id"}) {
    SCOPED_TRACE(key);
    std::string text = absl::StrCat(R"({"type":"object","properties":{"s":{")", key, R"(":"urn:ab:)",
                                    std::string(100000, 'a'), R"("}}})");
    auto schema = CompiledSchema::Compile(text);
    ASSERT_FALSE(schema.ok());
    EXPECT_THAT(schema.status().message(), HasSubstr("longer than"));
  }
  // A long JSON pointer is not a URI: fine.
  std::string name(5000, 'n');
  auto pointer = CompiledSchema::Compile(absl::StrCat(
      R"({"type":"object","definitions":{")", name, R"(":{"type":"integer"}},
          "properties":{"s":{"$ref":"#/definitions/)", name, R"("}}})"));
  EXPECT_TRUE(pointer.ok()) << pointer.status();
}

// Data is not a schema until a "$ref" makes it one: an unreadable pattern
// there is left alone.
TEST(HostileSchemaTest, UnreferencedDataWithLookaroundIsAccepted) {
  EXPECT_TRUE(CompiledSchema::Compile(
                  R"js({"type":"object","examples":[{"pattern":"(?!x)"}],
                        "x-ui":{"hint":{"pattern":"(?!x)"}},
                        "properties":{"p":{"type":"string","default":"(?!x)"}}})js")
                  .ok());
  EXPECT_TRUE(CompiledSchema::Compile(absl::StrCat(R"({"type":"object","examples":[{"id":"urn:ab:)",
                                                   std::string(100000, 'a'), R"("}]})"))
                  .ok());
}

// Below toolexec's registration checks: valijson itself, given patterns RE2
// cannot read and no table of compiled expressions, matches with RE2 or
// fails the value with the reason. It never falls back to std::regex.
// valijson alone: the first error, or "" when `value` is valid.
std::string ValijsonError(const char* schema_text, const Json& value) {
  Json doc = J(schema_text);
  valijson::Schema schema;
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  valijson::adapters::RapidJsonAdapter schema_adapter(doc);
  parser.populateSchema(schema_adapter, schema);
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::RapidJsonAdapter adapter(value);
  if (validator.validate(schema, adapter, &results)) return "";
  valijson::ValidationResults::Error first;
  return results.popError(first) ? first.description : "invalid";
}

TEST(Re2EngineTest, ValijsonNeverRunsStdRegex) {
  const char* kProperties = R"js({"type":"object",
      "properties":{"s":{"pattern":"^(?=a)[ab]*$"},"t":{"pattern":"^[ab]*$"}}})js";
  EXPECT_EQ(ValijsonError(kProperties, WithString("t", std::string(kLong, 'a'))), "");
  EXPECT_THAT(ValijsonError(kProperties, WithString("t", std::string(kLong, 'a') + "c")),
              HasSubstr("does not match"));
  EXPECT_THAT(ValijsonError(kProperties, WithString("s", std::string(kLong, 'a'))),
              HasSubstr("not RE2 syntax"));
  const char* kPatternProperties =
      R"js({"type":"object","patternProperties":{"^(?!z)":{"type":"integer"}}})js";
  EXPECT_THAT(ValijsonError(kPatternProperties, WithString(std::string(kLong, 'a'), "v")),
              HasSubstr("not RE2 syntax"));
}

}  // namespace
}  // namespace toolexec
