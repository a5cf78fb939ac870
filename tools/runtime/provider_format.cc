// Tool declarations in each provider's form: the schema conversions (OpenAI
// strict, Gemini), the provider-native declarations and provider-safe names.
#include "tools/runtime/provider_format.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rapidjson/pointer.h"
#include "tools/runtime/json_fields.h"

namespace toolexec {
namespace {

using Alloc = Json::AllocatorType;
using builtin::Member;

// The types a schema node admits: its "type", else what its enum, const,
// properties or items imply, else any type. `nullable` says whether null is
// among them; the rest come back in declared order, without "null".
std::vector<std::string> TypesOf(const JsonValue& node, bool* nullable) {
  *nullable = false;
  std::vector<std::string> types;
  auto add = [&](absl::string_view t) {
    if (t == "null") {
      *nullable = true;
      return;
    }
    for (const auto& x : types) {
      if (x == t) return;
    }
    types.emplace_back(t);
  };
  if (const JsonValue* type = Member(node, "type")) {
    if (type->IsString()) add(StringOf(*type));
    if (type->IsArray()) {
      for (const auto& t : type->GetArray()) {
        if (t.IsString()) add(StringOf(t));
      }
    }
    return types;
  }
  const JsonValue* values = Member(node, "enum");
  if (values != nullptr && values->IsArray()) {
    for (const auto& v : values->GetArray()) add(JsonTypeName(v));
    return types;
  }
  if (const JsonValue* c = Member(node, "const")) {
    add(JsonTypeName(*c));
    return types;
  }
  if (Member(node, "properties") != nullptr) return {"object"};
  if (Member(node, "items") != nullptr) return {"array"};
  return {"string", "number", "boolean", "object", "array"};
}

// Whether a node's object form has named properties and no open-ended
// "additionalProperties" schema (a map), i.e. whether it is a record.
bool IsRecord(const JsonValue& node, bool need_properties) {
  const JsonValue* props = Member(node, "properties");
  if (props == nullptr || !props->IsObject()) return false;
  if (need_properties && props->MemberCount() == 0) return false;
  const JsonValue* extra = Member(node, "additionalProperties");
  return extra == nullptr || (extra->IsBool() && !extra->GetBool());
}

bool HasItems(const JsonValue& node) {
  const JsonValue* items = Member(node, "items");
  return items != nullptr && items->IsObject();
}

// Collects what a provider's schema cannot carry, to say it in words.
class Notes {
 public:
  explicit Notes(const JsonValue& node) {
    if (const JsonValue* d = Member(node, "description"); d != nullptr && d->IsString()) {
      description_ = std::string(StringOf(*d));
    }
  }
  void Default(const JsonValue& value) {
    // Most descriptions state their default already.
    if (absl::StrContains(absl::AsciiStrToLower(description_), "default")) return;
    default_ = ToJsonString(value);
  }
  void Constraint(absl::string_view keyword, const JsonValue& value) {
    std::string v = ToJsonString(value);
    if (v.size() > 80) v = "(see the native declaration)";
    constraints_.push_back(absl::StrCat(keyword, " ", v));
  }
  void Sentence(absl::string_view s) { sentences_.emplace_back(s); }
  std::string Text() const {
    std::string out = description_;
    auto append = [&](absl::string_view s) {
      if (!out.empty() && out.back() != ' ') out += ' ';
      absl::StrAppend(&out, s);
    };
    for (const auto& s : sentences_) append(s);
    if (!default_.empty()) append(absl::StrCat("Default: ", default_, "."));
    if (!constraints_.empty()) {
      append(absl::StrCat("Constraints: ", absl::StrJoin(constraints_, ", "), "."));
    }
    return out;
  }

 private:
  std::string description_;
  std::string default_;
  std::vector<std::string> sentences_;
  std::vector<std::string> constraints_;
};

// Keywords every conversion handles itself (never reported as dropped).
bool Structural(absl::string_view k) {
  for (absl::string_view s : {"type", "description", "properties", "required",
                              "additionalProperties", "items", "enum", "const", "anyOf", "oneOf",
                              "title", "$schema", "$id", "$comment", "default"}) {
    if (k == s) return true;
  }
  return false;
}

// The per-type keywords a provider keeps, by the type they apply to.
struct Keep {
  std::vector<absl::string_view> string, number, array;
  bool Has(absl::string_view type, absl::string_view k) const {
    const auto& list = type == "string" ? string
                       : (type == "number" || type == "integer") ? number
                       : type == "array" ? array
                                         : std::vector<absl::string_view>{};
    for (auto x : list) {
      if (x == k) return true;
    }
    return false;
  }
  bool AnyHas(absl::string_view k) const {
    return Has("string", k) || Has("number", k) || Has("array", k);
  }
};

// One provider's schema dialect.
class Converter {
 public:
  enum class Dialect { kOpenAiStrict, kGemini };
  // `document` is the whole schema, against which "$ref"s resolve.
  Converter(Dialect d, const JsonValue& document) : d_(d), document_(document) {}

  // `node` converted; `optional` makes it nullable for OpenAI strict, whose
  // objects list every property as required. Local references are inlined
  // (neither dialect here keeps them), to a bounded depth.
  JsonValue Convert(const JsonValue& node, bool root, bool optional, Alloc& a,
                    int inlined = 0) const {
    if (const JsonValue* target = Referenced(node);
        target != nullptr && inlined < kMaxInliningDepth && inlinings_ < kMaxInlinings) {
      ++inlinings_;
      return Described(Convert(*target, root, optional, a, inlined + 1), node, a);
    }
    if (!root) {
      JsonValue alternatives;
      if (Alternatives(node, optional, a, inlined, &alternatives)) {
        return Described(std::move(alternatives), node, a);
      }
    }
    Notes notes(node);
    bool nullable = false;
    std::vector<std::string> types = root ? std::vector<std::string>{"object"}
                                          : TypesOf(node, &nullable);
    std::vector<std::string> kept;
    for (const auto& t : types) {
      if (Expressible(t, node, root)) kept.push_back(t);
    }
    if (const JsonValue* def = Member(node, "default")) notes.Default(*def);
    for (const auto& m : node.GetObject()) {
      absl::string_view k = StringOf(m.name);
      if (Structural(k) || keep_.AnyHas(k)) continue;
      if (k == "format" || k == "$ref" || k == "$defs" || k == "definitions") continue;
      notes.Constraint(k, m.value);
    }
    for (const auto& m : node.GetObject()) {
      absl::string_view k = StringOf(m.name);
      if (keep_.AnyHas(k) && !ForAnyKept(kept, k)) notes.Constraint(k, m.value);
    }
    JsonValue out(rapidjson::kObjectType);
    if (kept.empty()) {
      // A free-form object or an array of anything: JSON text, which the
      // daemon's coercion parses back where the declared type is single.
      notes.Sentence(absl::StrCat("Give the value as JSON text (", absl::StrJoin(types, " or "),
                                  ")."));
      AddMember(out, "type", TypeName("string", a), a);
    } else if (kept.size() == 1) {
      EmitTyped(kept[0], node, out, notes, a, inlined);
    } else {
      JsonValue branches(rapidjson::kArrayType);
      for (const auto& t : kept) {
        JsonValue branch(rapidjson::kObjectType);
        Notes unused(JsonValue{});
        EmitTyped(t, node, branch, unused, a, inlined);
        branches.PushBack(branch, a);
      }
      AddMember(out, "anyOf", std::move(branches), a);
    }
    std::string description = notes.Text();
    if (!description.empty()) {
      JsonValue with(rapidjson::kObjectType);
      AddMember(with, "description", MakeString(description, a), a);
      for (auto& m : out.GetObject()) with.AddMember(m.name, m.value, a);
      out = std::move(with);
    }
    if (nullable || (optional && d_ == Dialect::kOpenAiStrict)) MakeNullable(out, a);
    return out;
  }

 private:
  bool ForAnyKept(const std::vector<std::string>& kept, absl::string_view k) const {
    for (const auto& t : kept) {
      if (keep_.Has(t, k)) return true;
    }
    return false;
  }

  bool Expressible(absl::string_view type, const JsonValue& node, bool root) const {
    if (type == "object") return root || IsRecord(node, d_ == Dialect::kGemini);
    if (type == "array") return HasItems(node);
    return type == "string" || type == "number" || type == "integer" || type == "boolean";
  }

  JsonValue TypeName(absl::string_view t, Alloc& a) const {
    return MakeString(d_ == Dialect::kGemini ? absl::AsciiStrToUpper(t) : std::string(t), a);
  }

  // `converted` with the description of the node that referred to it.
  static JsonValue Described(JsonValue converted, const JsonValue& node, Alloc& a) {
    const JsonValue* d = Member(node, "description");
    if (d != nullptr && d->IsString() && converted.IsObject()) {
      if (converted.HasMember("description")) converted.RemoveMember("description");
      converted.AddMember("description", JsonValue(*d, a), a);
    }
    return converted;
  }

  // A node of "anyOf"/"oneOf" alternatives (a {"type":"null"} one makes it
  // nullable): the one left, or an anyOf of them converted, into `out`. False
  // for a node without alternatives. (Not a std::optional<JsonValue>: clang
  // 14 with libstdc++ cannot instantiate one, and the fuzz build is clang.)
  bool Alternatives(const JsonValue& node, bool optional, Alloc& a, int inlined,
                    JsonValue* out) const {
    const JsonValue* list = Member(node, "anyOf");
    if (list == nullptr) list = Member(node, "oneOf");
    if (list == nullptr || !list->IsArray() || list->Empty()) return false;
    bool nullable = optional && d_ == Dialect::kOpenAiStrict;
    std::vector<const JsonValue*> branches;
    for (const auto& b : list->GetArray()) {
      const JsonValue* type = Member(b, "type");
      if (type != nullptr && type->IsString() && StringOf(*type) == "null") {
        nullable = true;
      } else if (b.IsObject()) {
        branches.push_back(&b);
      }
    }
    if (branches.empty()) return false;
    if (branches.size() == 1) {
      JsonValue only = Convert(*branches[0], false, false, a, inlined);
      if (nullable) MakeNullable(only, a);
      *out = std::move(only);
      return true;
    }
    JsonValue converted(rapidjson::kArrayType);
    for (const JsonValue* b : branches) converted.PushBack(Convert(*b, false, false, a, inlined), a);
    JsonValue any_of(rapidjson::kObjectType);
    AddMember(any_of, "anyOf", std::move(converted), a);
    if (nullable) MakeNullable(any_of, a);
    *out = std::move(any_of);
    return true;
  }

  // What a "$ref" (local, "#/...") or a lone "allOf" member stands for; null
  // for any other node.
  const JsonValue* Referenced(const JsonValue& node) const {
    if (const JsonValue* all = Member(node, "allOf");
        all != nullptr && all->IsArray() && all->Size() == 1 && (*all)[0].IsObject()) {
      return &(*all)[0];
    }
    const JsonValue* ref = Member(node, "$ref");
    if (ref == nullptr || !ref->IsString() || !absl::StartsWith(StringOf(*ref), "#")) {
      return nullptr;
    }
    // "#/$defs/Item": the part after '#' is a JSON Pointer into this document.
    rapidjson::Pointer pointer(ref->GetString() + 1, ref->GetStringLength() - 1);
    if (!pointer.IsValid()) return nullptr;
    const JsonValue* target = pointer.Get(document_);
    return target != nullptr && target->IsObject() ? target : nullptr;
  }

  void EmitTyped(absl::string_view t, const JsonValue& node, JsonValue& out, Notes& notes,
                 Alloc& a, int inlined) const {
    // Gemini's enums are strings: a number enum becomes strings, which the
    // daemon's coercion turns back into numbers.
    const JsonValue* values = Member(node, "enum");
    const JsonValue* single = Member(node, "const");
    bool string_enum = d_ == Dialect::kGemini && (values != nullptr || single != nullptr) &&
                       t != "boolean";
    AddMember(out, "type", TypeName(string_enum ? "string" : t, a), a);
    if (values != nullptr || single != nullptr) {
      JsonValue list(rapidjson::kArrayType);
      auto push = [&](const JsonValue& v) {
        absl::string_view vt = JsonTypeName(v);
        if (!(vt == t || (t == "number" && vt == "integer"))) return;
        if (string_enum && !v.IsString()) {
          list.PushBack(MakeString(ToJsonString(v), a), a);
        } else {
          list.PushBack(JsonValue(v, a), a);
        }
      };
      if (values != nullptr && values->IsArray()) {
        for (const auto& v : values->GetArray()) push(v);
      } else if (single != nullptr) {
        push(*single);
      }
      if (!list.Empty()) AddMember(out, "enum", std::move(list), a);
    }
    if (const JsonValue* format = Member(node, "format"); format != nullptr && format->IsString()) {
      if (FormatSupported(t, StringOf(*format))) {
        AddMember(out, "format", JsonValue(*format, a), a);
      } else {
        notes.Constraint("format", *format);
      }
    }
    for (const auto& m : node.GetObject()) {
      if (keep_.Has(t, StringOf(m.name))) {
        out.AddMember(JsonValue(m.name, a), JsonValue(m.value, a), a);
      }
    }
    if (t == "object") {
      JsonValue props(rapidjson::kObjectType);
      JsonValue required(rapidjson::kArrayType);
      JsonValue order(rapidjson::kArrayType);
      const JsonValue* declared = Member(node, "properties");
      const JsonValue* req = Member(node, "required");
      auto is_required = [&](const JsonValue& name) {
        if (req == nullptr || !req->IsArray()) return false;
        for (const auto& r : req->GetArray()) {
          if (r == name) return true;
        }
        return false;
      };
      if (declared != nullptr && declared->IsObject()) {
        for (const auto& p : declared->GetObject()) {
          bool needed = is_required(p.name);
          JsonValue sub = p.value.IsObject() ? Convert(p.value, false, !needed, a, inlined)
                                             : Convert(JsonValue(rapidjson::kObjectType), false,
                                                       !needed, a, inlined);
          props.AddMember(JsonValue(p.name, a), sub, a);
          if (d_ == Dialect::kOpenAiStrict || needed) required.PushBack(JsonValue(p.name, a), a);
          order.PushBack(JsonValue(p.name, a), a);
        }
      }
      bool empty = props.ObjectEmpty();
      AddMember(out, "properties", std::move(props), a);
      if (d_ == Dialect::kOpenAiStrict) {
        AddMember(out, "required", std::move(required), a);
        AddMember(out, "additionalProperties", JsonValue(false), a);
      } else {
        if (!required.Empty()) AddMember(out, "required", std::move(required), a);
        if (!empty) AddMember(out, "propertyOrdering", std::move(order), a);
      }
    } else if (t == "array") {
      AddMember(out, "items", Convert(*Member(node, "items"), false, false, a, inlined), a);
    }
  }

  bool FormatSupported(absl::string_view t, absl::string_view f) const {
    if (d_ == Dialect::kGemini) {
      if (t == "string") return f == "date-time" || f == "enum";
      if (t == "number") return f == "float" || f == "double";
      if (t == "integer") return f == "int32" || f == "int64";
      return false;
    }
    if (t != "string") return false;
    for (absl::string_view s :
         {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}) {
      if (f == s) return true;
    }
    return false;
  }

  void MakeNullable(JsonValue& node, Alloc& a) const {
    if (d_ == Dialect::kGemini) {
      if (!node.HasMember("nullable")) AddMember(node, "nullable", JsonValue(true), a);
      return;
    }
    if (auto any = node.FindMember("anyOf"); any != node.MemberEnd()) {
      JsonValue null_branch(rapidjson::kObjectType);
      AddMember(null_branch, "type", MakeString("null", a), a);
      any->value.PushBack(null_branch, a);
      return;
    }
    auto type = node.FindMember("type");
    if (type == node.MemberEnd()) return;
    if (type->value.IsString()) {
      JsonValue both(rapidjson::kArrayType);
      both.PushBack(JsonValue(type->value, a), a);
      both.PushBack(MakeString("null", a), a);
      type->value = std::move(both);
    }
    if (auto values = node.FindMember("enum"); values != node.MemberEnd()) {
      values->value.PushBack(JsonValue(), a);
    }
  }

  // References are inlined at most this deep on one path (a recursive
  // schema ends there, as a value of any type) and this often in all.
  static constexpr int kMaxInliningDepth = 8;
  static constexpr int kMaxInlinings = 1000;

  Dialect d_;
  const JsonValue& document_;
  mutable int inlinings_ = 0;
  // What each dialect keeps per type, from the providers' documentation.
  Keep keep_ = d_ == Dialect::kGemini
                   ? Keep{{"pattern", "minLength", "maxLength"},
                          {"minimum", "maximum"},
                          {"minItems", "maxItems"}}
                   : Keep{{"pattern"},
                          {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                           "multipleOf"},
                          {"minItems", "maxItems"}};
};

JsonValue Schema(const JsonValue* parameters, Alloc& a) {
  JsonValue out(rapidjson::kObjectType);
  if (parameters != nullptr && parameters->IsObject()) out.CopyFrom(*parameters, a);
  if (!out.HasMember("type")) {
    // The root of tool arguments is an object (CompiledSchema::Compile).
    JsonValue with(rapidjson::kObjectType);
    AddMember(with, "type", MakeString("object", a), a);
    for (auto& m : out.GetObject()) with.AddMember(m.name, m.value, a);
    out = std::move(with);
  }
  return out;
}

Json ConvertRoot(Converter::Dialect dialect, const JsonValue& schema) {
  Json doc;
  const JsonValue empty(rapidjson::kObjectType);
  JsonValue converted =
      Converter(dialect, schema).Convert(schema.IsObject() ? schema : empty, true, false,
                                         doc.GetAllocator());
  static_cast<JsonValue&>(doc) = converted;
  return doc;
}

}  // namespace

Json OpenAiStrictSchema(const JsonValue& schema) { return ConvertRoot(Converter::Dialect::kOpenAiStrict, schema); }

Json GeminiSchema(const JsonValue& schema) { return ConvertRoot(Converter::Dialect::kGemini, schema); }

namespace {

// The provider-native declarations, by format and tool name, of the tools
// tagged kTagProvider (from the providers' documentation of each tool).
const char* NativeForm(DeclarationFormat format, absl::string_view tool) {
  struct Native {
    DeclarationFormat format;
    absl::string_view tool;
    const char* json;
  };
  static constexpr Native kNative[] = {
      {DeclarationFormat::kAnthropic, "str_replace_based_edit_tool",
       R"({"type":"text_editor_20250728","name":"str_replace_based_edit_tool"})"},
      {DeclarationFormat::kAnthropic, "bash", R"({"type":"bash_20250124","name":"bash"})"},
      {DeclarationFormat::kAnthropic, "memory", R"({"type":"memory_20250818","name":"memory"})"},
      {DeclarationFormat::kOpenAiResponses, "apply_patch", R"({"type":"apply_patch"})"},
      {DeclarationFormat::kOpenAiResponses, "shell", R"({"type":"shell"})"},
  };
  for (const Native& n : kNative) {
    if (n.format == format && n.tool == tool) return n.json;
  }
  return nullptr;
}

bool NameChar(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

constexpr size_t kMaxNameChars = 64;

std::string Sanitized(absl::string_view name) {
  std::string out;
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0])) || name[0] == '-') {
    out.push_back('_');
  }
  for (char c : name) out.push_back(NameChar(c) ? c : '_');
  if (out.size() > kMaxNameChars) out.resize(kMaxNameChars);
  return out;
}

// FNV-1a, 32 bits: stable across runs and builds (std::hash is not).
std::string HashSuffix(absl::string_view name) {
  uint32_t h = 2166136261u;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "_";
  for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kHex[(h >> shift) & 15]);
  return out;
}

}  // namespace

bool ProviderNames::Accepted(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameChars) return false;
  if (!absl::ascii_isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_') return false;
  for (char c : name) {
    if (!NameChar(c)) return false;
  }
  return true;
}

ProviderNames::ProviderNames(const ToolRegistry& registry) {
  // How many tools each plain rewrite would name (real names count too).
  absl::flat_hash_map<std::string, int> taken;
  for (const auto& t : registry.tools()) {
    ++taken[Accepted(t->name) ? t->name : Sanitized(t->name)];
  }
  for (const auto& t : registry.tools()) {
    if (Accepted(t->name)) continue;
    std::string name = Sanitized(t->name);
    if (taken[name] > 1) {
      const std::string suffix = HashSuffix(t->name);
      name.resize(std::min(name.size(), kMaxNameChars - suffix.size()));
      name += suffix;
    }
    by_rewritten_.emplace(name, t.get());
    rewritten_.emplace(t.get(), std::move(name));
  }
}

const std::string& ProviderNames::Of(const RegisteredTool& tool) const {
  auto it = rewritten_.find(&tool);
  return it == rewritten_.end() ? tool.name : it->second;
}

const RegisteredTool* ProviderNames::Resolve(absl::string_view provider_name) const {
  auto it = by_rewritten_.find(provider_name);
  return it == by_rewritten_.end() ? nullptr : it->second;
}

std::string ProviderToolsJson(DeclarationFormat format,
                              const std::vector<const RegisteredTool*>& tools,
                              const DeclarationOptions& options) {
  if (format == DeclarationFormat::kNative) return "";
  Json out;
  out.SetArray();
  Alloc& a = out.GetAllocator();
  for (const RegisteredTool* tool : tools) {
    const ToolSpec& spec = tool->tool->spec();
    if (spec.executor == ToolExecutor::kProvider) continue;  // not a function; see the header
    if (options.native_tools && spec.HasTag(kTagProvider)) {
      if (const char* native = NativeForm(format, tool->name)) {
        auto parsed = ParseJson(native);
        if (parsed.ok()) {
          out.PushBack(JsonValue(*parsed, a), a);
          continue;
        }
      }
    }
    const JsonValue* parameters = &tool->schema->document();
    JsonValue entry(rapidjson::kObjectType);
    if (format == DeclarationFormat::kOpenAiResponses) {
      AddMember(entry, "type", MakeString("function", a), a);
    }
    AddMember(entry, "name",
        MakeString(options.names != nullptr ? options.names->Of(*tool) : tool->name, a), a);
    AddMember(entry, "description", MakeString(spec.description, a), a);
    switch (format) {
      case DeclarationFormat::kOpenAiResponses:
        // Responses function tools are strict unless told otherwise; the
        // schema goes as declared, like kOpenAi's.
        AddMember(entry, "parameters", Schema(parameters, a), a);
        AddMember(entry, "strict", JsonValue(false), a);
        break;
      case DeclarationFormat::kOpenAi:
      case DeclarationFormat::kOpenAiStrict: {
        bool strict = format == DeclarationFormat::kOpenAiStrict;
        JsonValue params =
            strict ? JsonValue(OpenAiStrictSchema(Schema(parameters, a)), a)
                   : Schema(parameters, a);
        AddMember(entry, "parameters", std::move(params), a);
        if (strict) AddMember(entry, "strict", JsonValue(true), a);
        JsonValue wrapped(rapidjson::kObjectType);
        AddMember(wrapped, "type", MakeString("function", a), a);
        AddMember(wrapped, "function", std::move(entry), a);
        out.PushBack(wrapped, a);
        continue;
      }
      case DeclarationFormat::kAnthropic:
        AddMember(entry, "input_schema", Schema(parameters, a), a);
        break;
      case DeclarationFormat::kGemini: {
        Json params = GeminiSchema(Schema(parameters, a));
        const JsonValue* props = Member(params, "properties");
        // A function without parameters leaves them out (an OBJECT needs properties).
        if (props != nullptr && props->IsObject() && !props->ObjectEmpty()) {
          AddMember(entry, "parameters", JsonValue(params, a), a);
        }
        break;
      }
      case DeclarationFormat::kNative:
        break;
    }
    out.PushBack(entry, a);
  }
  return ToJsonString(out);
}

}  // namespace toolexec
