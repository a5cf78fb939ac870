// valijson's validator only through schema_regex.h, which replaces its
// std::regex; and that first, for RAPIDJSON_ASSERT.
#include "tools/runtime/schema_regex.h"
// clang-format off
#include "tools/runtime/schema.h"
// clang-format on

#include <exception>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

absl::string_view StringOf(const JsonValue& v) { return {v.GetString(), v.GetStringLength()}; }

// Converts `value` in place to the single type the schema wants, where the
// conversion is unambiguous (S4). Anything else is left untouched so the
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

void CoerceNode(const JsonValue& schema, JsonValue& value, Allocator& alloc) {
  if (!schema.IsObject()) return;
  CoerceScalar(TypesOf(schema), value, alloc);
  if (value.IsObject()) {
    auto props = schema.FindMember("properties");
    if (props == schema.MemberEnd() || !props->value.IsObject()) return;
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
    absl::StrAppend(&path, index ? "[" : ".", inner, index ? "]" : "");
  }
  return path;
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
  // The first error is the innermost, most specific one; later ones repeat it
  // from the enclosing schemas ("Failed to validate against schema ...").
  valijson::ValidationResults::Error first;
  results.popError(first);
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", value_name_ == "args" ? "arguments" : value_name_, ": ",
                   JsonPath(value_name_, first.context), ": ", first.description));
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
