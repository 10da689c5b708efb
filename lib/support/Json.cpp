// The strict JSON reader and writer of Json.hpp: a recursive-descent parser over the text that
// reports the first error with its position, and a compact writer.
#include "support/Json.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

namespace aspen::support::json {

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.bool_ = b;
  return v;
}

Value Value::number(std::uint64_t n) { return numberText(std::to_string(n)); }

Value Value::number(double d) { return numberText(fmt::format("{}", d)); }

Value Value::numberText(std::string text) {
  Value v;
  v.kind_ = Kind::Number;
  v.text_ = std::move(text);
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.text_ = std::move(s);
  return v;
}

Value Value::array(Array elements) {
  Value v;
  v.kind_ = Kind::Array;
  v.array_ = std::move(elements);
  return v;
}

Value Value::object(Object members) {
  Value v;
  v.kind_ = Kind::Object;
  v.object_ = std::move(members);
  return v;
}

namespace {

const char *kindName(Value::Kind kind) {
  switch (kind) {
  case Value::Kind::Null: return "null";
  case Value::Kind::Bool: return "a boolean";
  case Value::Kind::Number: return "a number";
  case Value::Kind::String: return "a string";
  case Value::Kind::Array: return "an array";
  case Value::Kind::Object: return "an object";
  }
  return "?";
}

void expectKind(const Value &v, Value::Kind kind) {
  if (v.kind() != kind)
    throw internal_error(fmt::format("json::Value: asked for {} of {}", kindName(kind),
                                     kindName(v.kind())));
}

} // namespace

bool Value::asBool() const {
  expectKind(*this, Kind::Bool);
  return bool_;
}

double Value::asDouble() const {
  expectKind(*this, Kind::Number);
  return std::strtod(text_.c_str(), nullptr);
}

std::optional<std::uint64_t> Value::asUnsigned() const {
  expectKind(*this, Kind::Number);
  std::uint64_t n = 0;
  const char *end = text_.data() + text_.size();
  auto [ptr, ec] = std::from_chars(text_.data(), end, n);
  if (ec != std::errc() || ptr != end)
    return std::nullopt;
  return n;
}

const std::string &Value::numberText() const {
  expectKind(*this, Kind::Number);
  return text_;
}

const std::string &Value::asString() const {
  expectKind(*this, Kind::String);
  return text_;
}

const Value::Array &Value::asArray() const {
  expectKind(*this, Kind::Array);
  return array_;
}

const Value::Object &Value::asObject() const {
  expectKind(*this, Kind::Object);
  return object_;
}

const Value *Value::find(std::string_view key) const {
  for (const auto &[k, v] : asObject())
    if (k == key)
      return &v;
  return nullptr;
}

Value &Value::set(std::string key, Value value) {
  expectKind(*this, Kind::Object);
  for (auto &[k, v] : object_)
    if (k == key)
      return v = std::move(value);
  return object_.emplace_back(std::move(key), std::move(value)).second;
}

void Value::push(Value value) {
  expectKind(*this, Kind::Array);
  array_.push_back(std::move(value));
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20)
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      else
        out += c;
    }
  }
  return out + '"';
}

std::string Value::write() const {
  switch (kind_) {
  case Kind::Null: return "null";
  case Kind::Bool: return bool_ ? "true" : "false";
  case Kind::Number: return text_;
  case Kind::String: return quote(text_);
  case Kind::Array: {
    std::string out = "[";
    for (std::size_t i = 0; i < array_.size(); ++i)
      out += (i ? ", " : "") + array_[i].write();
    return out + "]";
  }
  case Kind::Object: {
    std::string out = "{";
    for (std::size_t i = 0; i < object_.size(); ++i)
      out += (i ? ", " : "") + quote(object_[i].first) + ": " + object_[i].second.write();
    return out + "}";
  }
  }
  return "null";
}

namespace {

// Nesting deeper than this is rejected rather than risking the stack.
constexpr unsigned maxDepth = 256;

class Parser {
public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  Value document() {
    Value v = value(0);
    skipSpace();
    if (pos_ != text_.size())
      fail("end of input after the value");
    return v;
  }

private:
  [[noreturn]] void fail(std::string_view expected) const {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    const std::string found =
        pos_ < text_.size() ? fmt::format("'{}'", text_[pos_]) : std::string("end of input");
    throw invalid_option(fmt::format("{}: invalid JSON at offset {} (line {}, column {}): "
                                     "expected {}, found {}",
                                     source_, pos_, line, column, expected, found));
  }

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  void expect(char c) {
    if (!peek(c))
      fail(fmt::format("'{}'", c));
    ++pos_;
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  Value value(unsigned depth) {
    skipSpace();
    if (depth > maxDepth)
      fail(fmt::format("nesting at most {} deep", maxDepth));
    if (pos_ >= text_.size())
      fail("a value");
    switch (text_[pos_]) {
    case '{': return object(depth);
    case '[': return array(depth);
    case '"': return Value::string(string());
    case 't':
      if (literal("true"))
        return Value::boolean(true);
      break;
    case 'f':
      if (literal("false"))
        return Value::boolean(false);
      break;
    case 'n':
      if (literal("null"))
        return Value();
      break;
    default:
      if (text_[pos_] == '-' || isDigit(text_[pos_]))
        return number();
    }
    fail("a value (object, array, string, number, true, false or null)");
  }

  Value object(unsigned depth) {
    expect('{');
    Value v = Value::object();
    skipSpace();
    if (peek('}')) {
      ++pos_;
      return v;
    }
    for (;;) {
      skipSpace();
      const std::size_t keyPos = pos_;
      if (!peek('"'))
        fail("a string key");
      std::string key = string();
      if (v.find(key)) {
        pos_ = keyPos;
        fail(fmt::format("a key other than the repeated key {}", quote(key)));
      }
      skipSpace();
      expect(':');
      v.set(std::move(key), value(depth + 1));
      skipSpace();
      if (peek(',')) {
        ++pos_;
        continue;
      }
      if (!peek('}'))
        fail("',' or '}'");
      ++pos_;
      return v;
    }
  }

  Value array(unsigned depth) {
    expect('[');
    Value v = Value::array();
    skipSpace();
    if (peek(']')) {
      ++pos_;
      return v;
    }
    for (;;) {
      v.push(value(depth + 1));
      skipSpace();
      if (peek(',')) {
        ++pos_;
        continue;
      }
      if (!peek(']'))
        fail("',' or ']'");
      ++pos_;
      return v;
    }
  }

  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  void digits() {
    if (pos_ >= text_.size() || !isDigit(text_[pos_]))
      fail("a digit");
    while (pos_ < text_.size() && isDigit(text_[pos_]))
      ++pos_;
  }

  Value number() {
    const std::size_t start = pos_;
    if (peek('-'))
      ++pos_;
    if (peek('0'))
      ++pos_; // no leading zeros: "01" stops here and fails as trailing text
    else
      digits();
    if (peek('.')) {
      ++pos_;
      digits();
    }
    if (peek('e') || peek('E')) {
      ++pos_;
      if (peek('+') || peek('-'))
        ++pos_;
      digits();
    }
    return Value::numberText(std::string(text_.substr(start, pos_ - start)));
  }

  unsigned hex4() {
    unsigned code = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (pos_ >= text_.size())
        fail("four hex digits after \\u");
      const char c = text_[pos_];
      code <<= 4;
      if (isDigit(c))
        code |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f')
        code |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        code |= unsigned(c - 'A' + 10);
      else
        fail("four hex digits after \\u");
    }
    return code;
  }

  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += char(code);
    } else if (code < 0x800) {
      out += char(0xC0 | (code >> 6));
      out += char(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += char(0xE0 | (code >> 12));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    } else {
      out += char(0xF0 | (code >> 18));
      out += char(0x80 | ((code >> 12) & 0x3F));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (pos_ >= text_.size())
        fail("'\"' closing the string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        fail("an escaped control character");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size())
        fail("an escape character");
      const char e = text_[pos_++];
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        unsigned code = hex4();
        if (code >= 0xDC00 && code < 0xE000)
          fail("a high surrogate before a low surrogate");
        if (code >= 0xD800 && code < 0xDC00) {
          if (!literal("\\u"))
            fail("a low surrogate \\u after a high surrogate");
          const unsigned low = hex4();
          if (low < 0xDC00 || low >= 0xE000)
            fail("a low surrogate after a high surrogate");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(out, code);
        break;
      }
      default:
        --pos_;
        fail("one of the escapes \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u");
      }
    }
  }

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
};

} // namespace

Value parse(std::string_view text, std::string_view source) {
  return Parser(text, source).document();
}

} // namespace aspen::support::json
