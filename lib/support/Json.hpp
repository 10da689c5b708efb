// A small strict JSON reader and writer: Aspen's one JSON reader, for engine options from the
// environment, planner constraints and plan reports. Part of the support layer (lib/support),
// which libaspen builds and the layers use.
//
// Reads RFC 8259 JSON: objects (duplicate keys rejected, key order kept), arrays, strings (with
// escapes, \u including surrogate pairs, written back as UTF-8), numbers, true, false, null.
// Numbers keep their text, so integers are read exactly and "4.0" is not an integer. Anything
// else (trailing commas, comments, single quotes, text after the value) raises
// aspen::invalid_option naming the source, the offset, the line and column and what was
// expected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aspen::support::json {

class Value {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Array = std::vector<Value>;
  using Object = std::vector<std::pair<std::string, Value>>;

  Value() = default; // null
  static Value boolean(bool b);
  static Value number(std::uint64_t n);
  static Value number(double d);
  // A number from JSON text that is already known to be valid.
  static Value numberText(std::string text);
  static Value string(std::string s);
  static Value array(Array elements = {});
  static Value object(Object members = {});

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  // Accessors of the matching kind; a different kind is an internal_error (check kind() first).
  bool asBool() const;
  double asDouble() const;
  // The number when it is written as a non-negative integer that fits 64 bits.
  std::optional<std::uint64_t> asUnsigned() const;
  const std::string &numberText() const;
  const std::string &asString() const;
  const Array &asArray() const;
  const Object &asObject() const;

  // Object members: the value of `key`, or nullptr. Adding a key that exists replaces it.
  const Value *find(std::string_view key) const;
  Value &set(std::string key, Value value);
  void push(Value value);

  // Compact JSON: {"a": 1, "b": [true, null]}.
  std::string write() const;

  friend bool operator==(const Value &, const Value &) = default;

private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  std::string text_; // the string, or the number's text
  Array array_;
  Object object_;
};

// Parses `text`; `source` names it in error messages (for example "option planConstraints").
Value parse(std::string_view text, std::string_view source);

// `s` as a JSON string literal, quotes included.
std::string quote(std::string_view s);

} // namespace aspen::support::json
