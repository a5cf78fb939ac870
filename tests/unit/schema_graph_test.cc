// Schemas whose shape would overflow valijson's stack are refused before it
// parses them, naming the place; recursion that descends into the value is
// kept.
#include "tools/runtime/schema_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/common/test_tools.h"
#include "tools/runtime/schema.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::J;

// Why CompiledSchema::Compile refuses `schema` ("" if it compiles).
std::string Refusal(const std::string& schema) {
  auto s = CompiledSchema::Compile(schema);
  return s.ok() ? "" : std::string(s.status().message());
}

TEST(SchemaGraphTest, RefCyclesAreRefusedNamingTheCycle) {
  // Each of these overflowed the stack in valijson's parser or validator.
  EXPECT_THAT(Refusal(R"({"$ref":"#"})"), HasSubstr("\"$ref\" cycle: # -> #"));
  EXPECT_THAT(Refusal(R"({"type":"object","properties":{"a":{"$ref":"#/properties/a"}}})"),
              HasSubstr("cycle: #/properties/a -> #/properties/a"));
  EXPECT_THAT(Refusal(R"({"type":"object","properties":{"x":{"$ref":"#/definitions/a"}},
                          "definitions":{"a":{"$ref":"#/definitions/b"},
                                         "b":{"$ref":"#/definitions/a"}}})"),
              HasSubstr("#/definitions/a -> #/definitions/b -> #/definitions/a"));
  // Through an applicator, and through a spelling valijson decodes (%61 = a).
  EXPECT_THAT(Refusal(R"({"type":"object","allOf":[{"$ref":"#"}]})"),
              HasSubstr("cycle: # -> #/allOf/0 -> #"));
  EXPECT_THAT(Refusal(R"({"type":"object","properties":{"a":{"$ref":"#/properties/%61/"}}})"),
              HasSubstr("cycle: #/properties/%61 -> #/properties/%61"));
  // The finish tool's output schema goes the same way.
  auto value = CompiledSchema::CompileForValue(R"({"anyOf":[{"$ref":"#"}]})", "output");
  ASSERT_FALSE(value.ok());
  EXPECT_THAT(value.status().message(), HasSubstr("\"$ref\" cycle"));
}

TEST(SchemaGraphTest, RecursionThatDescendsIntoTheValueIsKept) {
  auto tree = CompiledSchema::Compile(R"({"type":"object","required":["name"],
      "properties":{"name":{"type":"string"},
                    "children":{"type":"array","items":{"$ref":"#"}}}})");
  ASSERT_TRUE(tree.ok()) << tree.status();
  Json good = J(R"({"name":"a","children":[{"name":"b","children":[{"name":"c"}]}]})");
  EXPECT_TRUE((*tree)->Prepare(good).ok());
  Json bad = J(R"({"name":"a","children":[{"name":"b","children":[{}]}]})");
  EXPECT_THAT((*tree)->Prepare(bad).message(), HasSubstr("children[0].children[0]"));
}

TEST(SchemaGraphTest, OnlyLocalRefsAndAbsoluteIds) {
  EXPECT_THAT(Refusal(R"({"type":"object","properties":{"a":{"$ref":"other.json#/x"}}})"),
              HasSubstr("not a reference into the schema itself"));
  // valijson appends a relative id to the scope at every visit: through a
  // cycle, a key without end.
  EXPECT_THAT(Refusal(R"({"type":"object","id":"a/","properties":{"p":{"$ref":"#"}}})"),
              HasSubstr("\"id\" \"a/\" at # is not an absolute URI"));
  EXPECT_EQ(Refusal(R"({"type":"object","id":"http://example.com/s.json",
                        "properties":{"p":{"$ref":"#"}}})"),
            "");
}

// A chain of `n` definitions, each an object whose one property refers to the next.
std::string Chain(int n) {
  std::string defs;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&defs, i ? "," : "", "\"d", i, "\":{\"type\":\"object\",\"properties\":{\"x\":",
                    i + 1 < n ? absl::StrCat("{\"$ref\":\"#/definitions/d", i + 1, "\"}")
                              : std::string("{}"),
                    "}}");
  }
  return absl::StrCat(R"({"type":"object","properties":{"x":{"$ref":"#/definitions/d0"}},)",
                      R"("definitions":{)", defs, "}}");
}

// Runs `f` on a thread with a stack of `bytes`.
void OnSmallStack(size_t bytes, std::function<void()> f) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* p) -> void* {
                  (*static_cast<std::function<void()>*>(p))();
                  return nullptr;
                },
                &f),
            0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

TEST(SchemaGraphTest, DepthAndSizeAreBounded) {
  // A chain as deep as the bound allows parses and validates on a small
  // stack (well under the 8 MiB threads have), one deeper is refused.
  const int fits = (kMaxSchemaDepth - 2) / 2;  // each d_i and its property
  std::string deep_value = "{}";
  for (int i = 0; i < 60; ++i) deep_value = absl::StrCat("{\"x\":", deep_value, "}");
  OnSmallStack(2 << 20, [&] {
    auto schema = CompiledSchema::Compile(Chain(fits));
    ASSERT_TRUE(schema.ok()) << schema.status();
    Json value = J(deep_value);
    EXPECT_TRUE((*schema)->Prepare(value).ok());
  });
  EXPECT_THAT(Refusal(Chain(kMaxSchemaDepth)), HasSubstr("nests deeper than"));

  std::string wide = R"({"type":"object","properties":{)";
  for (int i = 0; i <= kMaxSchemaNodes; ++i) {
    absl::StrAppend(&wide, i ? "," : "", "\"p", i, "\":{}");
  }
  EXPECT_THAT(Refusal(wide + "}}"), HasSubstr("more than 10000 subschemas"));

  // Applicators that stay on the same value, chained past the bound.
  std::string defs;
  for (int i = 0; i < kMaxSchemaInPlaceDepth; ++i) {
    absl::StrAppend(&defs, i ? "," : "", "\"a", i, "\":{\"allOf\":[{\"$ref\":\"#/definitions/a",
                    i + 1, "\"}]}");
  }
  EXPECT_THAT(
      Refusal(absl::StrCat(R"({"type":"object","properties":{"x":{"$ref":"#/definitions/a0"}},)",
                           R"("definitions":{)", defs, R"(,"a)", kMaxSchemaInPlaceDepth,
                           R"(":{}}})")),
      HasSubstr("apply to one value in a chain"));
}

}  // namespace
}  // namespace toolexec
