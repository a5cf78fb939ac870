// Declarations in each provider's form, checked against that provider's
// published schema rules for every built-in and example tool. The checkers are
// written from the providers' documentation, not from the converter.
#include "tools/runtime/provider_format.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "re2/re2.h"
#include "tools/builtin.h"
#include "examples/tools/examples.h"
#include "tests/common/test_tools.h"
#include "tools/runtime/schema.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {
namespace {

std::string S(const JsonValue& v) { return std::string(v.GetString(), v.GetStringLength()); }

// Every built-in (with every declarable tool and a configured finish output
// schema) and every example tool.
ToolRegistry AllTools() {
  ToolRegistry registry;
  BuiltinOptions options;
  options.declared_tools = DeclarableToolNames();
  options.finish_output_schema =
      R"({"type":"object","required":["answer"],"properties":{"answer":{"type":"string"},
          "score":{"type":"integer","enum":[1,2,3]}}})";
  options.subagents = {{"reviewer", "Reviews a change."}};
  EXPECT_TRUE(RegisterBuiltinTools(registry, options).ok());
  EXPECT_TRUE(examples::RegisterExampleTools(registry).ok());
  return registry;
}

std::vector<const RegisteredTool*> Listed(const ToolRegistry& registry) {
  std::vector<const RegisteredTool*> listed;
  for (const auto& t : registry.tools()) listed.push_back(t.get());
  return listed;
}

// Collects rule violations with the JSON path where they occur.
struct Violations {
  std::vector<std::string> list;
  void Add(const std::string& path, const std::string& what) {
    list.push_back(absl::StrCat(path, ": ", what));
  }
};

// OpenAI Structured Outputs, strict mode ("Supported schemas"): supported
// types string, number, boolean, integer, object, array, enum, anyOf (and
// null in a type list); every object sets additionalProperties false and
// lists every property in required; the root is an object, not anyOf; the
// supported keywords only (no default, minLength, ...); string formats from
// the listed set.
void CheckOpenAiStrictNode(const JsonValue& n, const std::string& path, bool root,
                           Violations& v) {
  static const std::set<std::string> kKeywords = {
      "type", "description", "properties", "required", "additionalProperties", "items", "enum",
      "const", "anyOf", "$ref", "$defs", "definitions", "title", "pattern", "format", "minimum",
      "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems"};
  static const std::set<std::string> kTypes = {"string", "number",  "boolean", "integer",
                                               "object", "array",   "null"};
  static const std::set<std::string> kFormats = {"date-time", "time",     "date",
                                                 "duration",  "email",    "hostname",
                                                 "ipv4",      "ipv6",     "uuid"};
  if (!n.IsObject()) return v.Add(path, "schema is not an object");
  for (const auto& m : n.GetObject()) {
    if (!kKeywords.count(S(m.name))) v.Add(path, absl::StrCat("unsupported keyword ", S(m.name)));
  }
  if (n.HasMember("anyOf")) {
    if (root) v.Add(path, "root must not be anyOf");
    int i = 0;
    for (const auto& b : n["anyOf"].GetArray()) {
      CheckOpenAiStrictNode(b, absl::StrCat(path, ".anyOf[", i++, "]"), false, v);
    }
    return;
  }
  if (!n.HasMember("type")) return v.Add(path, "node has no type");
  std::vector<std::string> types;
  if (n["type"].IsString()) types.push_back(S(n["type"]));
  if (n["type"].IsArray()) {
    for (const auto& t : n["type"].GetArray()) types.push_back(S(t));
  }
  for (const auto& t : types) {
    if (!kTypes.count(t)) v.Add(path, absl::StrCat("unsupported type ", t));
  }
  if (root && (types.size() != 1 || types[0] != "object")) v.Add(path, "root must be an object");
  if (n.HasMember("format") && !kFormats.count(S(n["format"]))) v.Add(path, "unsupported format");
  if (n.HasMember("enum")) {
    for (const auto& e : n["enum"].GetArray()) {
      std::string t = e.IsNull() ? "null" : e.IsString() ? "string" : e.IsBool() ? "boolean"
                                                                               : "number";
      bool fits = false;
      for (const auto& x : types) fits |= x == t || (t == "number" && x == "integer");
      if (!fits) v.Add(path, "enum value outside the node's type");
    }
  }
  bool is_object = std::find(types.begin(), types.end(), "object") != types.end();
  if (is_object) {
    if (!n.HasMember("additionalProperties") || !n["additionalProperties"].IsBool() ||
        n["additionalProperties"].GetBool()) {
      v.Add(path, "object without additionalProperties: false");
    }
    if (!n.HasMember("properties")) return v.Add(path, "object without properties");
    std::set<std::string> required;
    if (n.HasMember("required")) {
      for (const auto& r : n["required"].GetArray()) required.insert(S(r));
    }
    for (const auto& p : n["properties"].GetObject()) {
      if (!required.count(S(p.name))) v.Add(path, absl::StrCat("'", S(p.name), "' not required"));
      CheckOpenAiStrictNode(p.value, absl::StrCat(path, ".", S(p.name)), false, v);
    }
  }
  if (std::find(types.begin(), types.end(), "array") != types.end()) {
    if (!n.HasMember("items")) return v.Add(path, "array without items");
    CheckOpenAiStrictNode(n["items"], path + "[]", false, v);
  }
}

// Gemini FunctionDeclaration.parameters: the Schema object, "a select subset
// of an OpenAPI 3.0 schema object": the fields type (STRING, NUMBER, INTEGER,
// BOOLEAN, ARRAY, OBJECT), format, title, description, nullable, enum
// (strings), items, minItems, maxItems, properties, required,
// propertyOrdering, minimum, maximum, minLength, maxLength, pattern, anyOf;
// formats float/double for NUMBER, int32/int64 for INTEGER, enum/date-time
// for STRING. No additionalProperties, no type lists, no null type.
void CheckGeminiNode(const JsonValue& n, const std::string& path, Violations& v) {
  static const std::set<std::string> kFields = {
      "type",       "format",   "title",    "description", "nullable",  "enum",
      "items",      "minItems", "maxItems", "properties",  "required",  "propertyOrdering",
      "minimum",    "maximum",  "minLength", "maxLength",  "pattern",   "anyOf"};
  static const std::set<std::string> kTypes = {"STRING", "NUMBER", "INTEGER",
                                               "BOOLEAN", "ARRAY", "OBJECT"};
  if (!n.IsObject()) return v.Add(path, "schema is not an object");
  for (const auto& m : n.GetObject()) {
    if (!kFields.count(S(m.name))) v.Add(path, absl::StrCat("unsupported field ", S(m.name)));
  }
  if (n.HasMember("anyOf")) {
    int i = 0;
    for (const auto& b : n["anyOf"].GetArray()) {
      CheckGeminiNode(b, absl::StrCat(path, ".anyOf[", i++, "]"), v);
    }
    return;
  }
  if (!n.HasMember("type") || !n["type"].IsString()) return v.Add(path, "no single type");
  std::string type = S(n["type"]);
  if (!kTypes.count(type)) v.Add(path, absl::StrCat("unsupported type ", type));
  if (n.HasMember("format")) {
    std::string f = S(n["format"]);
    bool ok = (type == "NUMBER" && (f == "float" || f == "double")) ||
              (type == "INTEGER" && (f == "int32" || f == "int64")) ||
              (type == "STRING" && (f == "enum" || f == "date-time"));
    if (!ok) v.Add(path, absl::StrCat("unsupported format ", f));
  }
  if (n.HasMember("enum")) {
    for (const auto& e : n["enum"].GetArray()) {
      if (!e.IsString()) v.Add(path, "enum value not a string");
    }
    if (type != "STRING") v.Add(path, "enum on a non-STRING node");
  }
  if (type == "OBJECT") {
    if (!n.HasMember("properties") || n["properties"].ObjectEmpty()) {
      return v.Add(path, "OBJECT without properties");
    }
    std::set<std::string> names;
    for (const auto& p : n["properties"].GetObject()) {
      names.insert(S(p.name));
      CheckGeminiNode(p.value, absl::StrCat(path, ".", S(p.name)), v);
    }
    if (n.HasMember("required")) {
      for (const auto& r : n["required"].GetArray()) {
        if (!names.count(S(r))) v.Add(path, absl::StrCat("required '", S(r), "' not a property"));
      }
    }
  }
  if (type == "ARRAY") {
    if (!n.HasMember("items")) return v.Add(path, "ARRAY without items");
    CheckGeminiNode(n["items"], path + "[]", v);
  }
}

// Function names: OpenAI and Anthropic accept ^[a-zA-Z0-9_-]{1,64}$; Gemini
// a letter or underscore first, then letters, digits, _ . : -, at most 64.
bool OpenAiName(const std::string& name) { return RE2::FullMatch(name, "[a-zA-Z0-9_-]{1,64}"); }
bool GeminiName(const std::string& name) {
  return RE2::FullMatch(name, "[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}");
}

// The property names of a schema node, in order.
std::vector<std::string> PropertyOrder(const JsonValue& schema) {
  std::vector<std::string> names;
  if (schema.IsObject() && schema.HasMember("properties")) {
    for (const auto& p : schema["properties"].GetObject()) names.push_back(S(p.name));
  }
  return names;
}

class ProviderFormatTest : public ::testing::Test {
 protected:
  ToolRegistry registry_ = AllTools();
  std::vector<const RegisteredTool*> listed_ = Listed(registry_);

  Json Parse(DeclarationFormat f) {
    auto doc = ParseJson(ProviderToolsJson(f, listed_));
    EXPECT_TRUE(doc.ok());
    EXPECT_TRUE(doc->IsArray());
    return std::move(*doc);
  }
  // The tools a model calls as functions: all but the provider-native ones.
  std::vector<const RegisteredTool*> Functions() {
    std::vector<const RegisteredTool*> out;
    for (const auto& t : registry_.tools()) {
      if (t->tool->spec().executor != ToolExecutor::kProvider) out.push_back(t.get());
    }
    return out;
  }
};

TEST_F(ProviderFormatTest, OpenAiStrictFollowsStrictModeRulesForEveryTool) {
  Json tools = Parse(DeclarationFormat::kOpenAiStrict);
  auto functions = Functions();
  ASSERT_EQ(tools.Size(), functions.size());
  for (rapidjson::SizeType i = 0; i < tools.Size(); ++i) {
    const JsonValue& entry = tools[i];
    ASSERT_EQ(S(entry["type"]), "function");
    const JsonValue& fn = entry["function"];
    std::string name = S(fn["name"]);
    EXPECT_EQ(name, functions[i]->name);
    EXPECT_TRUE(OpenAiName(name)) << name;
    EXPECT_TRUE(fn["strict"].GetBool());
    EXPECT_FALSE(S(fn["description"]).empty());
    Violations v;
    CheckOpenAiStrictNode(fn["parameters"], name, true, v);
    EXPECT_THAT(v.list, ::testing::IsEmpty()) << ToJsonString(fn["parameters"]);
    EXPECT_EQ(PropertyOrder(fn["parameters"]), PropertyOrder(functions[i]->schema->document()))
        << name;
  }
}

TEST_F(ProviderFormatTest, GeminiFollowsTheOpenApiSubsetForEveryTool) {
  Json tools = Parse(DeclarationFormat::kGemini);
  auto functions = Functions();
  ASSERT_EQ(tools.Size(), functions.size());
  static const std::set<std::string> kDeclarationFields = {"name", "description", "parameters"};
  for (rapidjson::SizeType i = 0; i < tools.Size(); ++i) {
    const JsonValue& fn = tools[i];
    std::string name = S(fn["name"]);
    EXPECT_EQ(name, functions[i]->name);
    EXPECT_TRUE(GeminiName(name)) << name;
    for (const auto& m : fn.GetObject()) EXPECT_TRUE(kDeclarationFields.count(S(m.name))) << name;
    std::vector<std::string> declared = PropertyOrder(functions[i]->schema->document());
    if (!fn.HasMember("parameters")) {
      EXPECT_THAT(declared, ::testing::IsEmpty()) << name;  // only a tool without parameters
      continue;
    }
    Violations v;
    CheckGeminiNode(fn["parameters"], name, v);
    EXPECT_EQ(S(fn["parameters"]["type"]), "OBJECT");
    EXPECT_THAT(v.list, ::testing::IsEmpty()) << ToJsonString(fn["parameters"]);
    EXPECT_EQ(PropertyOrder(fn["parameters"]), declared) << name;
    std::vector<std::string> ordering;
    for (const auto& p : fn["parameters"]["propertyOrdering"].GetArray()) ordering.push_back(S(p));
    EXPECT_EQ(ordering, declared) << name;
  }
}

// Anthropic tool definitions: name (^[a-zA-Z0-9_-]{1,64}$), description,
// input_schema, a JSON Schema object with "type": "object".
TEST_F(ProviderFormatTest, AnthropicAndOpenAiCarryTheSchemaAsDeclared) {
  Json anthropic = Parse(DeclarationFormat::kAnthropic);
  Json openai = Parse(DeclarationFormat::kOpenAi);
  auto functions = Functions();
  ASSERT_EQ(anthropic.Size(), functions.size());
  ASSERT_EQ(openai.Size(), functions.size());
  static const std::set<std::string> kFields = {"name", "description", "input_schema"};
  for (rapidjson::SizeType i = 0; i < anthropic.Size(); ++i) {
    const JsonValue& a = anthropic[i];
    for (const auto& m : a.GetObject()) EXPECT_TRUE(kFields.count(S(m.name)));
    EXPECT_TRUE(OpenAiName(S(a["name"])));
    EXPECT_EQ(S(a["input_schema"]["type"]), "object");
    EXPECT_EQ(a["input_schema"], functions[i]->schema->document()) << S(a["name"]);
    const JsonValue& fn = openai[i]["function"];
    EXPECT_EQ(S(openai[i]["type"]), "function");
    EXPECT_FALSE(fn.HasMember("strict"));
    EXPECT_EQ(fn["parameters"], functions[i]->schema->document()) << S(fn["name"]);
  }
}

TEST_F(ProviderFormatTest, ProviderNativeToolsAreLeftToProviderConfig) {
  Json tools = Parse(DeclarationFormat::kAnthropic);
  std::set<std::string> names;
  for (const auto& t : tools.GetArray()) names.insert(S(t["name"]));
  EXPECT_FALSE(names.count("web_search"));
  EXPECT_FALSE(names.count("google_search"));
  EXPECT_TRUE(names.count("ask_question"));  // the harness runs it, the model calls it
  EXPECT_EQ(ProviderToolsJson(DeclarationFormat::kNative, listed_), "");
}

// What a strict-mode model sends (every property, null for the ones it leaves
// out) is accepted by the daemon as the declared schema's arguments.
TEST_F(ProviderFormatTest, StrictNullsAreAcceptedByTheDeclaredSchema) {
  const RegisteredTool* view = registry_.Find("view_file");
  ASSERT_NE(view, nullptr);
  Json args = *ParseJson(R"({"file_path":"a.txt","start_line":null,"end_line":null})");
  EXPECT_TRUE(view->schema->Prepare(args).ok());
  EXPECT_FALSE(args.HasMember("start_line"));
  const RegisteredTool* list = registry_.Find("list_directory");
  Json defaults = *ParseJson(R"({"directory_path":null,"depth":null,"include_hidden":null})");
  EXPECT_TRUE(list->schema->Prepare(defaults).ok());
  EXPECT_EQ(ToJsonString(defaults), R"({"directory_path":".","depth":1,"include_hidden":false})");
}

// One rule for every built-in the daemon runs: an argument it does not take
// is an error naming the ones it does (view_file once ignored `path`).
TEST_F(ProviderFormatTest, EveryBuiltinRefusesUnknownArgumentsNamingTheKnownOnes) {
  for (const auto& t : registry_.tools()) {
    if (t->source != "built-in" || t->tool->spec().executor != ToolExecutor::kDaemon) continue;
    Json args = *ParseJson(R"({"zz_unknown":1})");
    std::string m(t->schema->Prepare(args).message());
    EXPECT_THAT(m, ::testing::HasSubstr("args: unknown argument 'zz_unknown'; the known ones are "))
        << t->name;
  }
  Json path = *ParseJson(R"({"file_path":"a","path":"b"})");
  EXPECT_THAT(registry_.Find("view_file")->schema->Prepare(path).message(),
              ::testing::HasSubstr(
                  "unknown argument 'path'; the known ones are file_path, start_line, end_line"));
}

// The checkers can fail: the schemas as declared break the rules the
// conversions exist for.
TEST_F(ProviderFormatTest, CheckersRejectTheDeclaredSchemas) {
  Violations strict, gemini;
  CheckOpenAiStrictNode(registry_.Find("view_file")->schema->document(), "view_file", true, strict);
  EXPECT_THAT(strict.list, ::testing::Contains("view_file: 'start_line' not required"));
  CheckGeminiNode(registry_.Find("run_command")->schema->document(), "run_command", gemini);
  EXPECT_THAT(gemini.list,
              ::testing::Contains("run_command: unsupported field additionalProperties"));
}

// finish shows the configured output schema, so the model knows what to give.
TEST_F(ProviderFormatTest, FinishDeclaresItsConfiguredOutputSchema) {
  const JsonValue& output = registry_.Find("finish")->schema->document()["properties"]["output"];
  EXPECT_EQ(ToJsonString(output["required"]), R"(["answer"])");
  Json tools = Parse(DeclarationFormat::kOpenAiStrict);
  for (const auto& t : tools.GetArray()) {
    if (S(t["function"]["name"]) != "finish") continue;
    const JsonValue& strict = t["function"]["parameters"]["properties"]["output"];
    EXPECT_EQ(ToJsonString(strict["properties"]["score"]["enum"]), "[1,2,3,null]");
  }
}

// The Responses API's function tools are flat: {"type":"function", name,
// description, parameters, strict} (no "function" wrapper, unlike Chat
// Completions); strict is false, as the schema goes as declared.
TEST_F(ProviderFormatTest, OpenAiResponsesToolsAreFlatFunctions) {
  Json tools = Parse(DeclarationFormat::kOpenAiResponses);
  auto functions = Functions();
  ASSERT_EQ(tools.Size(), functions.size());
  static const std::set<std::string> kFields = {"type", "name", "description", "parameters",
                                                "strict"};
  for (rapidjson::SizeType i = 0; i < tools.Size(); ++i) {
    const JsonValue& t = tools[i];
    for (const auto& m : t.GetObject()) EXPECT_TRUE(kFields.count(S(m.name))) << S(m.name);
    EXPECT_EQ(S(t["type"]), "function");
    EXPECT_EQ(S(t["name"]), functions[i]->name);
    EXPECT_TRUE(OpenAiName(S(t["name"])));
    EXPECT_FALSE(t["strict"].GetBool());
    EXPECT_EQ(t["parameters"], functions[i]->schema->document()) << S(t["name"]);
  }
}

// native_tools: the tools the providers train on, in the providers' own
// declarations (Anthropic's text editor tool docs: {"type":
// "text_editor_20250728", "name": "str_replace_based_edit_tool"}; OpenAI's
// apply patch guide: tools=[{"type": "apply_patch"}]); every other tool, and
// every tool without native_tools, stays a function.
TEST_F(ProviderFormatTest, NativeToolsAreDeclaredInTheProvidersOwnForm) {
  DeclarationOptions native;
  native.native_tools = true;
  auto find = [](const Json& tools, const std::string& name) -> std::string {
    for (const auto& t : tools.GetArray()) {
      if (t.HasMember("name") && S(t["name"]) == name) return ToJsonString(t);
      if (!t.HasMember("name") && S(t["type"]) == name) return ToJsonString(t);
    }
    return "<absent>";
  };
  Json anthropic = *ParseJson(ProviderToolsJson(DeclarationFormat::kAnthropic, listed_, native));
  EXPECT_EQ(find(anthropic, "str_replace_based_edit_tool"),
            R"({"type":"text_editor_20250728","name":"str_replace_based_edit_tool"})");
  EXPECT_THAT(find(anthropic, "apply_patch"), ::testing::HasSubstr("\"input_schema\""));
  EXPECT_THAT(find(anthropic, "view_file"), ::testing::HasSubstr("\"input_schema\""));
  Json responses =
      *ParseJson(ProviderToolsJson(DeclarationFormat::kOpenAiResponses, listed_, native));
  EXPECT_EQ(find(responses, "apply_patch"), R"({"type":"apply_patch"})");
  EXPECT_THAT(find(responses, "str_replace_based_edit_tool"),
              ::testing::HasSubstr(R"("type":"function")"));
  EXPECT_EQ(responses.Size(), Functions().size());  // in place, nothing added or dropped
  Json plain = Parse(DeclarationFormat::kOpenAiResponses);
  EXPECT_THAT(find(plain, "apply_patch"), ::testing::HasSubstr(R"("type":"function")"));
  // Only the built-ins that carry the provider tag: a plugin's "apply_patch" is its own.
  ToolRegistry other;
  ASSERT_TRUE(other.Register(testing::MakeTool("apply_patch", nullptr), "plugin").ok());
  Json mine = *ParseJson(
      ProviderToolsJson(DeclarationFormat::kOpenAiResponses, Listed(other), native));
  EXPECT_THAT(ToJsonString(mine[0]), ::testing::HasSubstr(R"("type":"function")"));
}

// Names the providers reject (an MCP server's "docs.search") are declared
// under a name all of them accept and resolved back to the tool; a rewrite
// that would meet another name gets a hash of the real name instead.
TEST(ProviderNamesTest, RejectedNamesAreRewrittenReversibly) {
  ToolRegistry registry;
  // A registered name has letters, digits, '_', '-' and '.', at most 64.
  const std::string long_name = "9" + std::string(63, 'x');
  for (const std::string& name : {std::string("docs.search"), std::string("docs.fetch"),
                                  std::string("docs_fetch"), std::string("9lives"),
                                  std::string("ok_name"), std::string("a.b_c"),
                                  std::string("a_b.c"), long_name}) {
    ASSERT_TRUE(registry.Register(testing::MakeTool(name, nullptr), "test").ok()) << name;
  }
  ProviderNames names(registry);
  auto of = [&](const std::string& n) { return names.Of(*registry.Find(n)); };
  EXPECT_EQ(of("docs.search"), "docs_search");
  EXPECT_EQ(of("ok_name"), "ok_name");
  EXPECT_EQ(of("docs_fetch"), "docs_fetch");  // a real name keeps itself
  EXPECT_EQ(of("9lives"), "_9lives");
  // "docs.fetch" would be "docs_fetch", which is taken; "a.b_c" and "a_b.c" meet.
  EXPECT_THAT(of("docs.fetch"), ::testing::MatchesRegex("docs_fetch_[0-9a-f]{8}"));
  EXPECT_THAT(of("a.b_c"), ::testing::MatchesRegex("a_b_c_[0-9a-f]{8}"));
  EXPECT_THAT(of("a_b.c"), ::testing::MatchesRegex("a_b_c_[0-9a-f]{8}"));
  EXPECT_NE(of("a.b_c"), of("a_b.c"));
  EXPECT_EQ(of(long_name), "_9" + std::string(62, 'x'));
  std::set<std::string> seen;
  for (const auto& t : registry.tools()) {
    const std::string& declared = names.Of(*t);
    EXPECT_TRUE(OpenAiName(declared) && GeminiName(declared)) << declared;
    EXPECT_TRUE(seen.insert(declared).second) << "declared twice: " << declared;
    if (declared != t->name) {
      EXPECT_EQ(names.Resolve(declared), t.get()) << declared;
    }
  }
  EXPECT_EQ(names.Resolve("nope"), nullptr);
  EXPECT_EQ(names.Resolve("ok_name"), nullptr);  // a real name is the registry's to find
  // The declarations use them.
  DeclarationOptions options;
  options.names = &names;
  Json tools = *ParseJson(ProviderToolsJson(DeclarationFormat::kAnthropic, Listed(registry), options));
  EXPECT_EQ(S(tools[0]["name"]), "docs_search");
  Json openai = *ParseJson(ProviderToolsJson(DeclarationFormat::kOpenAi, Listed(registry), options));
  EXPECT_EQ(S(openai[0]["function"]["name"]), "docs_search");
}

// What schema generators write (pydantic, zod): local references, a lone
// allOf, anyOf with a null branch for optional values, a recursive type.
TEST(ProviderSchemaTest, ReferencesAndAlternativesAreInlinedAndStayValid) {
  Json schema = *ParseJson(R"({"type":"object","required":["item"],"properties":{
      "item":{"$ref":"#/$defs/Item","description":"The item."},
      "note":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null},
      "tree":{"allOf":[{"$ref":"#/$defs/Node"}]}},
    "$defs":{"Item":{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}},
             "Node":{"type":"object","properties":{"children":{"type":"array",
                     "items":{"$ref":"#/$defs/Node"}}}}}})");
  Json strict = OpenAiStrictSchema(schema);
  Violations v;
  CheckOpenAiStrictNode(strict, "s", true, v);
  EXPECT_THAT(v.list, ::testing::IsEmpty()) << ToJsonString(strict);
  EXPECT_EQ(ToJsonString(strict["properties"]["item"]),
            R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],)"
            R"("additionalProperties":false,"description":"The item."})");
  EXPECT_EQ(ToJsonString(strict["properties"]["note"]["type"]), R"(["string","null"])");
  Json gemini = GeminiSchema(schema);
  Violations g;
  CheckGeminiNode(gemini, "g", g);
  EXPECT_THAT(g.list, ::testing::IsEmpty()) << ToJsonString(gemini);
  EXPECT_TRUE(gemini["properties"]["note"]["nullable"].GetBool());
  EXPECT_LT(ToJsonString(gemini).size(), 20000u);  // the recursion ends
}

TEST(ProviderSchemaTest, DroppedKeywordsAreSaidInTheDescription) {
  Json schema = *ParseJson(R"({"type":"object","properties":{
      "p":{"type":"string","minLength":1,"description":"A pattern."},
      "n":{"type":"integer","default":5},
      "m":{"type":"object","additionalProperties":{"type":"string"}},
      "k":{"type":"integer","enum":[1,2]}}})");
  Json strict = OpenAiStrictSchema(schema);
  EXPECT_EQ(S(strict["properties"]["p"]["description"]), "A pattern. Constraints: minLength 1.");
  EXPECT_EQ(S(strict["properties"]["n"]["description"]), "Default: 5.");
  EXPECT_EQ(ToJsonString(strict["properties"]["n"]["type"]), R"(["integer","null"])");
  // A map has no strict form: it is asked for as JSON text, which coercion parses.
  EXPECT_EQ(ToJsonString(strict["properties"]["m"]["type"]), R"(["string","null"])");
  EXPECT_EQ(ToJsonString(strict["properties"]["k"]["enum"]), "[1,2,null]");
  Json gemini = GeminiSchema(schema);
  EXPECT_EQ(ToJsonString(gemini["properties"]["k"]), R"({"type":"STRING","enum":["1","2"]})");
  EXPECT_TRUE(gemini["properties"]["p"].HasMember("minLength"));
  auto compiled = CompiledSchema::Compile(ToJsonString(schema));
  ASSERT_TRUE(compiled.ok());
  Json args = *ParseJson(R"({"m":"{\"A\":\"b\"}","k":"2"})");
  EXPECT_TRUE((*compiled)->Prepare(args).ok());
  EXPECT_EQ(ToJsonString(args), R"({"m":{"A":"b"},"k":2,"n":5})");
}

}  // namespace
}  // namespace toolexec
