// valijson's validator only through schema_regex.h, which replaces its
// std::regex; and that first, for RAPIDJSON_ASSERT.
#include "tools/runtime/schema_regex.h"
// clang-format off
#include "tools/runtime/schema.h"
// clang-format on

#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/runtime/schema_graph.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/utf8.h"
#include "valijson/schema.hpp"
#include "valijson/schema_parser.hpp"
#include "valijson/validation_results.hpp"

namespace toolexec {
namespace {

using Allocator = Json::AllocatorType;

// The JSON types a schema node admits, "null" aside.
struct WantedTypes {
  std::vector<absl::string_view> types;
  bool has(absl::string_view t) const {
    for (auto x : types) {
      if (x == t) return true;
    }
    return false;
  }
  // The single non-null type, treating {"integer","number"} as "number".
  absl::string_view single() const {
    if (types.size() == 1) return types[0];
    if (types.size() == 2 && has("integer") && has("number")) return "number";
    return "";
  }
};

WantedTypes TypesOf(const JsonValue& schema) {
  WantedTypes wanted;
  if (!schema.IsObject()) return wanted;
  auto type = schema.FindMember("type");
  if (type == schema.MemberEnd()) return wanted;
  auto add = [&](const JsonValue& t) {
    if (t.IsString() && absl::string_view(t.GetString(), t.GetStringLength()) != "null") {
      wanted.types.emplace_back(t.GetString(), t.GetStringLength());
    }
  };
  if (type->value.IsArray()) {
    for (const auto& t : type->value.GetArray()) add(t);
  } else {
    add(type->value);
  }
  return wanted;
}

// Converts `value` in place to the single type the schema wants, where the
// conversion is unambiguous [Arguments]. Anything else is left untouched so the
// validator reports the real type error.
void CoerceScalar(const WantedTypes& wanted, JsonValue& value, Allocator& alloc) {
  absl::string_view want = wanted.single();
  if (want.empty()) return;
  if (value.IsString()) {
    absl::string_view text = absl::StripAsciiWhitespace(StringOf(value));
    if (want == "integer" || want == "number") {
      // Strict JSON number grammar: "3", "-2", "0.5", "1e3"; not "0x1", "inf", ".5".
      auto parsed = ParseJson(text, 1);
      if (!parsed.ok() || !parsed->IsNumber()) return;
      IntegralNumbersToIntegers(*parsed);  // "1.0" is the integer 1
      if (want == "integer" && !(parsed->IsInt64() || parsed->IsUint64())) return;  // "3.5"
      value.CopyFrom(*parsed, alloc);
    } else if (want == "boolean") {
      if (absl::EqualsIgnoreCase(text, "true")) {
        value.SetBool(true);
      } else if (absl::EqualsIgnoreCase(text, "false")) {
        value.SetBool(false);
      }
    } else if (want == "array" || want == "object") {
      if (text.empty() || text.front() != (want == "array" ? '[' : '{')) return;
      auto parsed = ParseJson(text);
      if (!parsed.ok()) return;
      value.CopyFrom(*parsed, alloc);
    }
  } else if (value.IsNumber() && want == "string") {
    // RapidJSON prints the shortest exact form: 7 -> "7", 0.5 -> "0.5".
    std::string text = ToJsonString(value);
    value.SetString(text.data(), static_cast<rapidjson::SizeType>(text.size()), alloc);
  }
}

// Whether a schema node accepts null: its type names "null", or it has no
// type and its enum (if any) lists null.
bool AdmitsNull(const JsonValue& schema) {
  if (!schema.IsObject()) return true;
  auto type = schema.FindMember("type");
  if (type != schema.MemberEnd()) {
    if (type->value.IsString()) return StringOf(type->value) == "null";
    if (type->value.IsArray()) {
      for (const auto& t : type->value.GetArray()) {
        if (t.IsString() && StringOf(t) == "null") return true;
      }
    }
    return false;
  }
  auto values = schema.FindMember("enum");
  if (values == schema.MemberEnd() || !values->value.IsArray()) return true;
  for (const auto& v : values->value.GetArray()) {
    if (v.IsNull()) return true;
  }
  return false;
}

bool IsRequired(const JsonValue& schema, const JsonValue& name) {
  auto required = schema.FindMember("required");
  if (required == schema.MemberEnd() || !required->value.IsArray()) return false;
  for (const auto& r : required->value.GetArray()) {
    if (r == name) return true;
  }
  return false;
}

// A model in OpenAI's strict mode must send every property, and sends an
// optional one it means to leave out as null: an optional property whose
// schema does not accept null is removed when it is null, so it is absent
// (and defaulted). A null for a required property stays, and fails
// validation.
void DropNullOptionals(const JsonValue& schema, const JsonValue& props, JsonValue& value) {
  std::vector<std::string> drop;
  for (const auto& member : value.GetObject()) {
    if (!member.value.IsNull()) continue;
    auto sub = props.FindMember(member.name);
    if (sub == props.MemberEnd() || AdmitsNull(sub->value) || IsRequired(schema, member.name)) {
      continue;
    }
    drop.emplace_back(member.name.GetString(), member.name.GetStringLength());
  }
  for (const auto& name : drop) value.EraseMember(name);
}

void CoerceNode(const JsonValue& schema, JsonValue& value, Allocator& alloc) {
  if (!schema.IsObject()) return;
  CoerceScalar(TypesOf(schema), value, alloc);
  if (value.IsObject()) {
    auto props = schema.FindMember("properties");
    if (props == schema.MemberEnd() || !props->value.IsObject()) return;
    DropNullOptionals(schema, props->value, value);
    for (auto& member : value.GetObject()) {
      auto sub = props->value.FindMember(member.name);
      if (sub != props->value.MemberEnd()) CoerceNode(sub->value, member.value, alloc);
    }
  } else if (value.IsArray()) {
    auto items = schema.FindMember("items");
    if (items == schema.MemberEnd()) return;
    auto elements = value.GetArray();
    for (rapidjson::SizeType i = 0; i < elements.Size(); ++i) {
      if (items->value.IsObject()) {
        CoerceNode(items->value, elements[i], alloc);
      } else if (items->value.IsArray() && i < items->value.Size()) {
        CoerceNode(items->value[i], elements[i], alloc);
      }
    }
  }
}

void DefaultNode(const JsonValue& schema, JsonValue& value, Allocator& alloc) {
  if (!schema.IsObject()) return;
  if (value.IsObject()) {
    auto props = schema.FindMember("properties");
    if (props == schema.MemberEnd() || !props->value.IsObject()) return;
    for (const auto& prop : props->value.GetObject()) {
      if (!prop.value.IsObject()) continue;
      auto member = value.FindMember(prop.name);
      if (member != value.MemberEnd()) {
        DefaultNode(prop.value, member->value, alloc);
        continue;
      }
      auto def = prop.value.FindMember("default");
      if (def == prop.value.MemberEnd()) continue;
      value.AddMember(JsonValue(prop.name, alloc), JsonValue(def->value, alloc), alloc);
    }
  } else if (value.IsArray()) {
    auto items = schema.FindMember("items");
    if (items == schema.MemberEnd() || !items->value.IsObject()) return;
    for (auto& e : value.GetArray()) DefaultNode(items->value, e, alloc);
  }
}

// A key the caller sent, echoed in a message, is cut to this many characters,
// and at most kMaxEchoedKeys unknown keys are named: a huge request must not
// make a huge error.
constexpr size_t kMaxEchoedKeyChars = 64;
constexpr size_t kMaxEchoedKeys = 10;
constexpr size_t kMaxProblemChars = 1000;  // one broken rule's line

// valijson's context is {"<root>", "[name]", "[0]", ...}; make it "args.name[0]".
std::string JsonPath(absl::string_view root, const std::vector<std::string>& context) {
  std::string path(root);
  for (size_t i = 1; i < context.size(); ++i) {
    const std::string& c = context[i];
    absl::string_view inner = c;
    if (inner.size() >= 2 && inner.front() == '[' && inner.back() == ']') {
      inner = inner.substr(1, inner.size() - 2);
    }
    bool index = !inner.empty() && inner.find_first_not_of("0123456789") == std::string::npos;
    absl::StrAppend(&path, index ? "[" : ".", Utf8Cut(inner, kMaxEchoedKeyChars),
                    index ? "]" : "");
  }
  return path;
}

// The schema node and the value at valijson's context path (either may be
// null where the path leaves them).
struct Located {
  const JsonValue* schema = nullptr;
  const JsonValue* value = nullptr;
};

Located Locate(const JsonValue& schema, const JsonValue& value,
               const std::vector<std::string>& context) {
  Located at{&schema, &value};
  for (size_t i = 1; i < context.size() && at.value != nullptr; ++i) {
    absl::string_view step = context[i];
    if (step.size() >= 2 && step.front() == '[' && step.back() == ']') {
      step = step.substr(1, step.size() - 2);
    }
    const JsonValue* s = at.schema;
    at.schema = nullptr;
    if (at.value->IsObject()) {
      auto member = at.value->FindMember(JsonValue(rapidjson::StringRef(step.data(), step.size())));
      at.value = member == at.value->MemberEnd() ? nullptr : &member->value;
      if (s != nullptr && s->IsObject()) {
        auto props = s->FindMember("properties");
        if (props != s->MemberEnd() && props->value.IsObject()) {
          auto sub = props->value.FindMember(JsonValue(rapidjson::StringRef(step.data(), step.size())));
          if (sub != props->value.MemberEnd()) at.schema = &sub->value;
        }
      }
    } else if (at.value->IsArray()) {
      size_t index = 0;
      if (!absl::SimpleAtoi(step, &index) || index >= at.value->Size()) return {};
      at.value = &(*at.value)[static_cast<rapidjson::SizeType>(index)];
      if (s != nullptr && s->IsObject()) {
        auto items = s->FindMember("items");
        if (items != s->MemberEnd() && items->value.IsObject()) at.schema = &items->value;
        if (items != s->MemberEnd() && items->value.IsArray() && index < items->value.Size()) {
          at.schema = &items->value[static_cast<rapidjson::SizeType>(index)];
        }
      }
    } else {
      return {};
    }
  }
  return at;
}

std::string Abbreviated(const JsonValue& v) {
  std::string text = ToJsonString(v);
  if (text.size() > 60) text = absl::StrCat(text.substr(0, Utf8SafePrefix(text, 57)), "...");
  return text;
}

// valijson's description of a broken rule, made to say what was expected:
// the type wanted and the one given, the allowed values, the names an object
// takes.
std::string Explain(const JsonValue& schema, const JsonValue& args,
                    const std::vector<std::string>& context, const std::string& description) {
  Located at = Locate(schema, args, context);
  if (at.schema == nullptr || at.value == nullptr || !at.schema->IsObject()) return description;
  if (absl::StartsWith(description, "Value type not permitted")) {
    auto type = at.schema->FindMember("type");
    if (type == at.schema->MemberEnd()) return description;
    std::vector<std::string> wanted;
    if (type->value.IsString()) wanted.emplace_back(StringOf(type->value));
    if (type->value.IsArray()) {
      for (const auto& t : type->value.GetArray()) {
        if (t.IsString()) wanted.emplace_back(StringOf(t));
      }
    }
    return absl::StrCat("expected type ", absl::StrJoin(wanted, " or "), ", got ",
                        JsonTypeName(*at.value), " ", Abbreviated(*at.value));
  }
  if (absl::StartsWith(description, "Failed to match against any enum")) {
    auto values = at.schema->FindMember("enum");
    if (values == at.schema->MemberEnd()) return description;
    return absl::StrCat("expected one of ", ToJsonString(values->value), ", got ",
                        Abbreviated(*at.value));
  }
  if (absl::StartsWith(description, "Object contains a property that could not be validated") &&
      at.value->IsObject()) {
    auto props = at.schema->FindMember("properties");
    std::vector<std::string> known, unknown;
    if (props != at.schema->MemberEnd() && props->value.IsObject()) {
      for (const auto& p : props->value.GetObject()) {
        known.emplace_back(p.name.GetString(), p.name.GetStringLength());
      }
    }
    size_t unknown_count = 0;
    for (const auto& m : at.value->GetObject()) {
      absl::string_view name(m.name.GetString(), m.name.GetStringLength());
      if (std::find(known.begin(), known.end(), name) == known.end() &&
          ++unknown_count <= kMaxEchoedKeys) {
        unknown.push_back(absl::StrCat("'", Utf8Cut(name, kMaxEchoedKeyChars), "'"));
      }
    }
    if (unknown_count > unknown.size()) {
      unknown.push_back(absl::StrCat("and ", unknown_count - unknown.size(), " more"));
    }
    absl::string_view noun = context.size() <= 1 ? "argument" : "property";
    return absl::StrCat("unknown ", noun, unknown_count == 1 ? " " : "s ",
                        absl::StrJoin(unknown, ", "), "; the known ones are ",
                        known.empty() ? "(none)" : absl::StrJoin(known, ", "));
  }
  return description;
}

}  // namespace

CompiledSchema::CompiledSchema() = default;
CompiledSchema::~CompiledSchema() = default;

absl::StatusOr<std::unique_ptr<CompiledSchema>> CompiledSchema::Compile(absl::string_view text) {
  auto doc = ParseJson(text);
  if (!doc.ok()) return absl::InvalidArgumentError(absl::StrCat("schema: ", doc.status().message()));
  if (!doc->IsObject()) {
    return absl::InvalidArgumentError(
        absl::StrCat("schema must be a JSON object, got ", JsonTypeName(*doc)));
  }
  auto type = doc->FindMember("type");
  if (type != doc->MemberEnd() && !(type->value.IsString() && StringOf(type->value) == "object")) {
    return absl::InvalidArgumentError(
        "schema for tool arguments must have \"type\": \"object\" (arguments are a JSON object)");
  }
  return Build(std::move(*doc));
}

absl::StatusOr<std::unique_ptr<CompiledSchema>> CompiledSchema::CompileForValue(
    absl::string_view text, absl::string_view value_name) {
  auto doc = ParseJson(text);
  if (!doc.ok()) return absl::InvalidArgumentError(absl::StrCat("schema: ", doc.status().message()));
  if (!doc->IsObject() && !doc->IsBool()) {
    return absl::InvalidArgumentError(
        absl::StrCat("schema must be a JSON object or a boolean, got ", JsonTypeName(*doc)));
  }
  auto schema = Build(std::move(*doc));
  if (schema.ok()) (*schema)->value_name_ = std::string(value_name);
  return schema;
}

absl::StatusOr<std::unique_ptr<CompiledSchema>> CompiledSchema::Build(Json document) {
  std::unique_ptr<CompiledSchema> schema(new CompiledSchema());
  schema->document_ = std::move(document);
  // valijson wants integers in "maxItems" and the like, and compares "const"
  // and "enum" by type: 2.0 there is the integer 2, as in arguments.
  IntegralNumbersToIntegers(schema->document_);
  auto regexes = schema_regex::RegexTable::Build(schema->document_);
  if (!regexes.ok()) return regexes.status();
  // valijson's parser and validator recurse per subschema and per "$ref":
  // cycles and sizes that would overflow the stack are refused first.
  if (absl::Status s = CheckSchemaGraph(schema->document_); !s.ok()) return s;
  schema->regexes_ = std::make_unique<const schema_regex::RegexTable>(std::move(*regexes));
  schema->compiled_ = std::make_unique<valijson::Schema>();
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::RapidJsonAdapter adapter(schema->document_);
    parser.populateSchema(adapter, *schema->compiled_);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON Schema: ", e.what()));
  }
  return schema;
}

void CompiledSchema::Coerce(Json& args) const {
  IntegralNumbersToIntegers(args);
  CoerceNode(document_, args, args.GetAllocator());
}

absl::Status CompiledSchema::Validate(const JsonValue& args) const {
  if (HasIntegralNonIntegers(args)) {
    Json normalized = CopyJson(args);
    IntegralNumbersToIntegers(normalized);
    return ValidateExact(normalized);
  }
  return ValidateExact(args);
}

absl::Status CompiledSchema::ValidateExact(const JsonValue& args) const {
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::RapidJsonAdapter adapter(args);
  schema_regex::ScopedRegexTable regexes(regexes_.get());
  bool ok = false;
  try {
    ok = validator.validate(*compiled_, adapter, &results);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(value_name_ == "args" ? "arguments" : value_name_,
                     " could not be validated: ", e.what()));
  }
  if (ok) return absl::OkStatus();
  // Every rule broken, each with its path; valijson also reports each failure
  // again from the enclosing schemas ("Failed to validate against schema
  // ..."), which says nothing new unless it is all there is.
  std::vector<std::string> problems;
  std::string fallback;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    // valijson's own descriptions may quote a key or value whole: cut.
    std::string line = Utf8Cut(absl::StrCat(JsonPath(value_name_, error.context), ": ",
                                            Explain(document_, args, error.context,
                                                    error.description)),
                               kMaxProblemChars);
    if (absl::StartsWith(error.description, "Failed to validate")) {
      if (fallback.empty()) fallback = line;
      continue;
    }
    if (std::find(problems.begin(), problems.end(), line) == problems.end()) {
      problems.push_back(std::move(line));
    }
  }
  if (problems.empty()) problems.push_back(fallback);
  // A bounded message: an array of a million wrong items is not a million lines.
  constexpr size_t kMaxProblems = 10;
  if (problems.size() > kMaxProblems) {
    size_t more = problems.size() - kMaxProblems;
    problems.resize(kMaxProblems);
    problems.push_back(absl::StrCat("and ", more, " more"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", value_name_ == "args" ? "arguments" : value_name_, ": ",
                   absl::StrJoin(problems, "; ")));
}

void CompiledSchema::ApplyDefaults(Json& args) const {
  DefaultNode(document_, args, args.GetAllocator());
}

absl::Status CompiledSchema::Prepare(Json& args) const {
  if (value_name_ == "args" && !args.IsObject()) {
    return absl::InvalidArgumentError(
        absl::StrCat("arguments must be a JSON object, got ", JsonTypeName(args)));
  }
  Coerce(args);
  if (absl::Status s = ValidateExact(args); !s.ok()) return s;
  ApplyDefaults(args);
  return absl::OkStatus();
}

}  // namespace toolexec
