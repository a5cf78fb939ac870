#include "tools/runtime/json.h"

#include <algorithm>
#include <cmath>
#include <system_error>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/charconv.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "rapidjson/error/en.h"
#include "rapidjson/reader.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace {

// Wraps the document's SAX handler to count nesting while the iterative
// parser runs, so a too-deep input stops at the first level past the limit.
class DepthLimitedHandler {
 public:
  DepthLimitedHandler(Json& doc, int max_depth) : doc_(doc), max_depth_(max_depth) {}

  bool Null() { return doc_.Null(); }
  bool Bool(bool b) { return doc_.Bool(b); }
  bool Int(int i) { return doc_.Int(i); }
  bool Uint(unsigned u) { return doc_.Uint(u); }
  bool Int64(int64_t i) { return doc_.Int64(i); }
  bool Uint64(uint64_t u) { return doc_.Uint64(u); }
  bool Double(double d) { return doc_.Double(d); }
  // Numbers arrive as their text (kParseNumbersAsStringsFlag). Integers are
  // converted by RapidJSON as before (int, unsigned, int64, uint64, or a
  // double when larger). Every other number is converted by
  // absl::from_chars (correctly rounded): RapidJSON 1.1.0's full-precision
  // conversion took clz(0) when every digit is zero and the exponent is far
  // from 0 ("0.0e40" became -1.5e228, "0e-30" 9.6e-240), and overflows an
  // int on a long mantissa far below 1 ("-0.000…2e-219"). A number below
  // the smallest double is a zero with its sign; one above the largest is
  // refused, as RapidJSON refuses it.
  bool RawNumber(const char* s, rapidjson::SizeType n, bool copy) {
    absl::string_view text(s, n);
    if (text.find_first_of(".eE") != absl::string_view::npos) {
      double d = 0;
      const auto read = absl::from_chars(s, s + n, d);
      if (read.ec == std::errc::result_out_of_range) {
        // `d` is unspecified on a range error: which end it passed is read
        // from the text.
        if (Magnitude(text) > 0) {
          refusal_ = rapidjson::kParseErrorNumberTooBig;
          return false;
        }
        d = absl::StartsWith(text, "-") ? -0.0 : 0.0;
      } else if (read.ec != std::errc() || read.ptr != s + n) {
        // The reader has already checked the text is a JSON number.
        refusal_ = rapidjson::kParseErrorValueInvalid;
        return false;
      }
      return doc_.Double(d);
    }
    rapidjson::MemoryStream ms(s, n);
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> is(ms);
    rapidjson::Reader reader;
    refusal_ = reader.Parse<rapidjson::kParseFullPrecisionFlag>(is, doc_).Code();
    return refusal_ == rapidjson::kParseErrorNone;
  }
  // RapidJSON 1.1.0 decodes a lone low surrogate ("\udc00") into bytes that
  // are not UTF-8, which nothing downstream (protobuf strings, our own
  // writer read back) accepts: refused, as newer RapidJSON does.
  bool String(const char* s, rapidjson::SizeType n, bool copy) {
    return ValidText(s, n) && doc_.String(s, n, copy);
  }
  bool StartObject() { return Enter() && doc_.StartObject(); }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) {
    return ValidText(s, n) && doc_.Key(s, n, copy);
  }
  bool EndObject(rapidjson::SizeType n) {
    --depth_;
    return doc_.EndObject(n);
  }
  bool StartArray() { return Enter() && doc_.StartArray(); }
  bool EndArray(rapidjson::SizeType n) {
    --depth_;
    return doc_.EndArray(n);
  }

  bool too_deep() const { return too_deep_; }

  // The decimal exponent of a JSON number's first significant digit,
  // clamped to +-100000.
  static int64_t Magnitude(absl::string_view text) {
    const size_t e = text.find_first_of("eE");
    int64_t exp = 0;
    if (e != absl::string_view::npos) {
      absl::string_view x = text.substr(e + 1);
      const bool negative = absl::ConsumePrefix(&x, "-");
      absl::ConsumePrefix(&x, "+");
      x = x.substr(std::min(x.find_first_not_of('0'), x.size()));
      exp = x.size() > 6 ? 100000 : 0;
      if (x.size() <= 6) (void)absl::SimpleAtoi(x.empty() ? "0" : x, &exp);
      if (negative) exp = -exp;
    }
    const absl::string_view mantissa = text.substr(0, e);
    const size_t point = std::min(mantissa.find('.'), mantissa.size());
    const size_t first = mantissa.find_first_of("123456789");
    if (first == absl::string_view::npos) return exp;
    const int64_t at = first < point ? static_cast<int64_t>(point - first - 1)
                                     : -static_cast<int64_t>(first - point);
    return std::clamp<int64_t>(exp + at, -100000, 100000);
  }
  // Why a number or string was refused (kParseErrorNone if none was).
  rapidjson::ParseErrorCode refusal() const { return refusal_; }

 private:
  bool ValidText(const char* s, rapidjson::SizeType n) {
    if (IsValidUtf8(absl::string_view(s, n))) return true;
    refusal_ = rapidjson::kParseErrorStringUnicodeSurrogateInvalid;
    return false;
  }

  bool Enter() {
    if (++depth_ > max_depth_) {
      too_deep_ = true;
      return false;
    }
    return true;
  }

  Json& doc_;
  int max_depth_;
  int depth_ = 0;
  bool too_deep_ = false;
  rapidjson::ParseErrorCode refusal_ = rapidjson::kParseErrorNone;
};

}  // namespace

absl::StatusOr<Json> ParseJson(absl::string_view text, int max_depth) {
  Json doc;
  rapidjson::MemoryStream ms(text.data(), text.size());
  rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> is(ms);
  rapidjson::Reader reader;
  bool too_deep = false;
  rapidjson::ParseErrorCode refusal = rapidjson::kParseErrorNone;
  rapidjson::ParseResult result;
  // Populate() feeds the document through our depth-counting handler and
  // finalizes it only when the generator reports success.
  auto generate = [&](Json& handler) {
    DepthLimitedHandler limited(handler, max_depth);
    result = reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag |
                          rapidjson::kParseStopWhenDoneFlag |
                          rapidjson::kParseNumbersAsStringsFlag>(is, limited);
    too_deep = limited.too_deep();
    refusal = limited.refusal();
    return !result.IsError();
  };
  doc.Populate(generate);
  if (too_deep) {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON nests deeper than ", max_depth, " levels"));
  }
  if (result.IsError()) {
    const rapidjson::ParseErrorCode code =
        refusal != rapidjson::kParseErrorNone ? refusal : result.Code();
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at offset ", result.Offset(),
                                                   ": ", rapidjson::GetParseError_En(code)));
  }
  // kParseStopWhenDoneFlag leaves trailing text to us: only whitespace may follow.
  for (size_t i = is.Tell(); i < text.size(); ++i) {
    char c = text[i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid JSON at offset ", i, ": unexpected text after the value"));
    }
  }
  return doc;
}

absl::Status CheckUniqueKeys(const JsonValue& value, absl::string_view root) {
  // Iterative (like JsonDepth); `path` holds the steps to the node at hand.
  constexpr size_t kMaxKeyChars = 64;
  struct Node {
    const JsonValue* value;
    size_t depth;
    std::string step;  // ".key" or "[i]" from its parent
  };
  std::vector<Node> stack;
  stack.push_back({&value, 0, ""});
  std::vector<std::string> path;
  absl::flat_hash_set<absl::string_view> seen;
  while (!stack.empty()) {
    Node node = std::move(stack.back());
    stack.pop_back();
    path.resize(node.depth);
    if (node.depth > 0) path.back() = std::move(node.step);
    const JsonValue& v = *node.value;
    if (v.IsObject()) {
      seen.clear();
      for (const auto& m : v.GetObject()) {
        absl::string_view key(m.name.GetString(), m.name.GetStringLength());
        if (!seen.insert(key).second) {
          return absl::InvalidArgumentError(absl::StrCat("duplicate key '",
                                                         Utf8Cut(key, kMaxKeyChars), "' in ",
                                                         root, absl::StrJoin(path, "")));
        }
      }
      for (const auto& m : v.GetObject()) {
        if (!m.value.IsObject() && !m.value.IsArray()) continue;
        absl::string_view key(m.name.GetString(), m.name.GetStringLength());
        stack.push_back({&m.value, node.depth + 1, absl::StrCat(".", Utf8Cut(key, kMaxKeyChars))});
      }
    } else if (v.IsArray()) {
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        if (!v[i].IsObject() && !v[i].IsArray()) continue;
        stack.push_back({&v[i], node.depth + 1, absl::StrCat("[", i, "]")});
      }
    }
  }
  return absl::OkStatus();
}

std::string ToJsonString(const JsonValue& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

Json CopyJson(const JsonValue& value) {
  Json doc;
  doc.CopyFrom(value, doc.GetAllocator());
  return doc;
}

bool SanitizeJsonUtf8(JsonValue& value, Json::AllocatorType& alloc) {
  bool replaced = false;
  auto fix = [&](JsonValue& text) {
    const absl::string_view bytes = StringOf(text);
    if (IsValidUtf8(bytes)) return;
    const std::string valid = SanitizeUtf8(bytes);
    text.SetString(valid.data(), static_cast<rapidjson::SizeType>(valid.size()), alloc);
    replaced = true;
  };
  // Iterative, so a deep value cannot overflow the stack here.
  std::vector<JsonValue*> stack = {&value};
  while (!stack.empty()) {
    JsonValue* v = stack.back();
    stack.pop_back();
    if (v->IsString()) {
      fix(*v);
    } else if (v->IsObject()) {
      for (auto& m : v->GetObject()) {
        fix(m.name);
        stack.push_back(&m.value);
      }
    } else if (v->IsArray()) {
      for (auto& e : v->GetArray()) stack.push_back(&e);
    }
  }
  return replaced;
}

int JsonDepth(const JsonValue& value) {
  // Iterative, so a deep value built in code cannot overflow the stack here.
  int max_depth = 0;
  std::vector<std::pair<const JsonValue*, int>> stack = {{&value, 0}};
  while (!stack.empty()) {
    auto [v, d] = stack.back();
    stack.pop_back();
    if (v->IsObject()) {
      max_depth = std::max(max_depth, d + 1);
      for (const auto& m : v->GetObject()) stack.push_back({&m.value, d + 1});
    } else if (v->IsArray()) {
      max_depth = std::max(max_depth, d + 1);
      for (const auto& e : v->GetArray()) stack.push_back({&e, d + 1});
    }
  }
  return max_depth;
}

size_t ApproxJsonBytes(const JsonValue& value) {
  constexpr size_t kPerValue = sizeof(JsonValue);
  size_t bytes = 0;
  std::vector<const JsonValue*> stack = {&value};
  while (!stack.empty()) {
    const JsonValue* v = stack.back();
    stack.pop_back();
    bytes += kPerValue;
    if (v->IsString()) {
      bytes += v->GetStringLength();
    } else if (v->IsObject()) {
      for (const auto& m : v->GetObject()) {
        bytes += kPerValue + m.name.GetStringLength();
        stack.push_back(&m.value);
      }
    } else if (v->IsArray()) {
      for (const auto& e : v->GetArray()) stack.push_back(&e);
    }
  }
  return bytes;
}

std::optional<int64_t> IntegralValue(double d) {
  constexpr double kMaxExact = 9007199254740992.0;  // 2^53
  if (!(std::fabs(d) <= kMaxExact) || d != std::trunc(d)) return std::nullopt;  // NaN fails too
  return static_cast<int64_t>(d);
}

namespace {

// Calls `f` on every number below `value` that is stored as a double and is
// integral; iterative, like JsonDepth. Stops when `f` returns false.
template <typename V, typename F>
void ForEachIntegralDouble(V& value, F f) {
  std::vector<V*> stack = {&value};
  while (!stack.empty()) {
    V* v = stack.back();
    stack.pop_back();
    if (v->IsObject()) {
      for (auto& m : v->GetObject()) stack.push_back(&m.value);
    } else if (v->IsArray()) {
      for (auto& e : v->GetArray()) stack.push_back(&e);
    } else if (v->IsDouble()) {
      if (auto i = IntegralValue(v->GetDouble()); i.has_value() && !f(*v, *i)) return;
    }
  }
}

}  // namespace

void IntegralNumbersToIntegers(JsonValue& value) {
  ForEachIntegralDouble(value, [](JsonValue& v, int64_t i) {
    v.SetInt64(i);
    return true;
  });
}

bool HasIntegralNonIntegers(const JsonValue& value) {
  bool found = false;
  ForEachIntegralDouble(value, [&](const JsonValue&, int64_t) {
    found = true;
    return false;
  });
  return found;
}

Json MakeObject() {
  Json doc;
  doc.SetObject();
  return doc;
}

JsonValue MakeString(absl::string_view s, Json::AllocatorType& a) {
  return JsonValue(s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
}

absl::string_view StringOf(const JsonValue& value) {
  return {value.GetString(), value.GetStringLength()};
}

void AddMember(JsonValue& object, absl::string_view key, JsonValue value,
               Json::AllocatorType& a) {
  object.AddMember(MakeString(key, a), value, a);
}

absl::string_view JsonTypeName(const JsonValue& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
      return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return "boolean";
    case rapidjson::kObjectType:
      return "object";
    case rapidjson::kArrayType:
      return "array";
    case rapidjson::kStringType:
      return "string";
    case rapidjson::kNumberType:
      return value.IsInt64() || value.IsUint64() ? "integer" : "number";
  }
  return "unknown";
}

}  // namespace toolexec
