#include "mcp/protocol/content.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace toolexec::mcp {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

Json J(const char* text) {
  auto doc = ParseJson(text);
  EXPECT_TRUE(doc.ok()) << doc.status();
  return std::move(*doc);
}

TEST(AnnotationTagsTest, FollowsTheSpecDefaults) {
  EXPECT_THAT(AnnotationTags(J(R"({"name":"t"})")), ElementsAre("destructive"));
  EXPECT_THAT(AnnotationTags(J(R"({"name":"t","annotations":{"readOnlyHint":true}})")),
              ElementsAre("read_only", "idempotent"));
  EXPECT_THAT(AnnotationTags(J(R"({"annotations":{"destructiveHint":false}})")), IsEmpty());
  EXPECT_THAT(
      AnnotationTags(J(R"({"annotations":{"destructiveHint":false,"idempotentHint":true}})")),
      ElementsAre("idempotent"));
  // destructiveHint is meaningless for a read-only tool.
  EXPECT_THAT(AnnotationTags(J(R"({"annotations":{"readOnlyHint":true,"destructiveHint":true}})")),
              ElementsAre("read_only", "idempotent"));
  EXPECT_THAT(AnnotationTags(J(R"({"annotations":{"readOnlyHint":"yes"}})")),
              ElementsAre("destructive"));
}

TEST(ToMcpToolTest, TheDeclaredSchemaAndAnnotationsFromTheSpec) {
  ToolSpec writer("edit", "Edits.", "");
  writer.Tags({"destructive", "idempotent"}).DisplayName("Edit");
  EXPECT_EQ(ToJsonString(ToMcpTool("edit", writer, J(R"({"properties":{"b":{},"a":{}}})"))),
            R"({"name":"edit","title":"Edit","description":"Edits.",)"
            R"("inputSchema":{"properties":{"b":{},"a":{}},"type":"object"},)"
            R"("annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true}})");
  // Registered under another name (an MCP server's prefix): that name; the
  // display name is the title only when it differs.
  ToolSpec reader("view", "", "");
  reader.ReadOnly().DisplayName("up__view");
  Json view = ToMcpTool("up__view", reader, J("[]"));
  EXPECT_EQ(ToJsonString(view["name"]), R"("up__view")");
  EXPECT_FALSE(view.HasMember("title"));
  EXPECT_EQ(ToJsonString(view["inputSchema"]), R"({"type":"object"})");
  EXPECT_EQ(ToJsonString(view["annotations"]), R"({"readOnlyHint":true})");
}

TEST(FromCallToolResultTest, TextBlocksAreJoined) {
  auto out = FromCallToolResult(
      J(R"({"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]})"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(out->is_error);
  EXPECT_EQ(ToJsonString(out->value), R"("a\nb")");
}

TEST(FromCallToolResultTest, StructuredContentIsPreferred) {
  auto out = FromCallToolResult(J(
      R"({"content":[{"type":"text","text":"{\"sum\":3}"}],"structuredContent":{"sum":3}})"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ToJsonString(out->value), R"({"sum":3})");
}

TEST(FromCallToolResultTest, BinaryAndResourcesBesideText) {
  auto out = FromCallToolResult(J(R"({"content":[
      {"type":"text","text":"here"},
      {"type":"image","data":"iVBO","mimeType":"image/png"},
      {"type":"audio","data":"UklG","mimeType":"audio/wav"},
      {"type":"resource","resource":{"uri":"test://1","mimeType":"text/plain","text":"t"}},
      {"type":"resource","resource":{"uri":"test://2","mimeType":"application/octet-stream","blob":"AA=="}},
      {"type":"resource_link","uri":"file:///x","name":"x","mimeType":"text/plain"},
      {"type":"future","x":1}]})"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ToJsonString(out->value),
            R"({"result":"here","content":[)"
            R"({"mime_type":"image/png","data":"iVBO"},)"
            R"({"mime_type":"audio/wav","data":"UklG"},)"
            R"({"uri":"test://1","mime_type":"text/plain","text":"t"},)"
            R"({"uri":"test://2","mime_type":"application/octet-stream","data":"AA=="},)"
            R"({"uri":"file:///x","name":"x","mime_type":"text/plain"},)"
            R"({"type":"future","x":1}]})");
}

TEST(FromCallToolResultTest, ImageOnlyHasNoResultText) {
  auto out = FromCallToolResult(J(R"({"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]})"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ToJsonString(out->value), R"({"content":[{"mime_type":"image/png","data":"AA=="}]})");
}

TEST(FromCallToolResultTest, ErrorCarriesTheText) {
  auto out = FromCallToolResult(
      J(R"({"content":[{"type":"text","text":"no such file"}],"isError":true,"structuredContent":{"a":1}})"));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->is_error);
  EXPECT_EQ(out->error_message, "no such file");
  auto bare = FromCallToolResult(J(R"({"content":[],"isError":true})"));
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(bare->error_message.empty());
}

TEST(FromCallToolResultTest, RejectsMalformed) {
  EXPECT_FALSE(FromCallToolResult(J("[]")).ok());
  EXPECT_FALSE(FromCallToolResult(J(R"({"content":"x"})")).ok());
  auto empty = FromCallToolResult(J("{}"));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(ToJsonString(empty->value), R"("")");
}

TEST(ToCallToolResultTest, SuccessAndFailure) {
  Json payload = J(R"({"total":3})");
  EXPECT_EQ(ToJsonString(ToCallToolResult(payload, "3 in total", false)),
            R"({"content":[{"type":"text","text":"3 in total"}],"structuredContent":{"total":3}})");
  EXPECT_EQ(ToJsonString(ToCallToolResult(payload, "", false)),
            R"({"content":[{"type":"text","text":"{\"total\":3}"}],"structuredContent":{"total":3}})");
  Json error = J(R"({"error":"boom"})");
  EXPECT_EQ(ToJsonString(ToCallToolResult(error, "boom", true)),
            R"({"content":[{"type":"text","text":"boom"}],"isError":true})");
}

}  // namespace
}  // namespace toolexec::mcp
