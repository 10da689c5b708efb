// ProfileValue: a value of a debug-information tree, as Poplar's DebugInfo::setValue and
// PopLibs' toProfileValue take it: a string, a number, a boolean, a map from names to values or
// a vector of values. Asking for another kind than the value holds raises type_error naming
// both kinds. serializeToJSON writes one as JSON (Poplar's function of the same name).
#pragma once

#include <aspen/Error.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace aspen {

class ProfileValue {
public:
  enum class Type { STRING, NUMBER, BOOLEAN, MAP, VECTOR };
  using String = std::string;
  using Map = std::map<std::string, ProfileValue>;
  using Vector = std::vector<ProfileValue>;

  ProfileValue() : ProfileValue(String()) {} // the empty string
  ProfileValue(String s) : type_(Type::STRING), string_(std::move(s)) {}
  ProfileValue(const char *s) : ProfileValue(String(s ? s : "")) {}
  ProfileValue(bool b) : type_(Type::BOOLEAN), bool_(b) {}
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, int> = 0>
  ProfileValue(T number) : type_(Type::NUMBER), number_(static_cast<double>(number)) {}
  ProfileValue(Map m) : type_(Type::MAP), map_(std::move(m)) {}
  ProfileValue(Vector v) : type_(Type::VECTOR), vector_(std::move(v)) {}

  Type type() const { return type_; }
  const String &asString() const { return check(Type::STRING), string_; }
  double asDouble() const { return check(Type::NUMBER), number_; }
  bool asBool() const { return check(Type::BOOLEAN), bool_; }
  const Map &asMap() const { return check(Type::MAP), map_; }
  const Vector &asVector() const { return check(Type::VECTOR), vector_; }
  // A map's member or a vector's element; type_error for another kind, index_error when absent.
  const ProfileValue &operator[](const std::string &key) const {
    const auto it = asMap().find(key);
    if (it == map_.end())
      throw index_error("ProfileValue: the map has no member '" + key + "'");
    return it->second;
  }
  const ProfileValue &operator[](std::size_t i) const {
    if (i >= asVector().size())
      throw index_error("ProfileValue: element " + std::to_string(i) + " of a vector of " +
                        std::to_string(vector_.size()));
    return vector_[i];
  }
  // Members of a map, elements of a vector, 0 for the other kinds.
  std::size_t size() const {
    return type_ == Type::MAP ? map_.size() : type_ == Type::VECTOR ? vector_.size() : 0;
  }

  friend bool operator==(const ProfileValue &a, const ProfileValue &b) {
    return a.type_ == b.type_ && a.string_ == b.string_ && a.number_ == b.number_ &&
           a.bool_ == b.bool_ && a.map_ == b.map_ && a.vector_ == b.vector_;
  }
  friend bool operator!=(const ProfileValue &a, const ProfileValue &b) { return !(a == b); }

  static const char *typeName(Type t) {
    switch (t) {
    case Type::STRING: return "string";
    case Type::NUMBER: return "number";
    case Type::BOOLEAN: return "boolean";
    case Type::MAP: return "map";
    case Type::VECTOR: return "vector";
    }
    return "?";
  }

private:
  void check(Type wanted) const {
    if (type_ != wanted)
      throw type_error(std::string("ProfileValue: asked for a ") + typeName(wanted) +
                       " of a value that holds a " + typeName(type_));
  }
  Type type_;
  String string_;
  double number_ = 0;
  bool bool_ = false;
  Map map_;
  Vector vector_;
};

// `value` as JSON: maps as objects (keys in order), vectors as arrays, numbers with the digits
// that read back as the same double; prettyPrint puts each member on its own line, indented by
// two spaces a level.
inline void serializeToJSON(std::ostream &out, const ProfileValue &value, bool prettyPrint = false,
                            unsigned depth = 0) {
  const auto newline = [&](unsigned level) {
    if (prettyPrint)
      out << '\n' << std::string(2 * level, ' ');
  };
  switch (value.type()) {
  case ProfileValue::Type::STRING: {
    out << '"';
    for (unsigned char c : value.asString()) {
      if (c == '"' || c == '\\')
        out << '\\' << c;
      else if (c < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
        out << escaped;
      } else
        out << c;
    }
    out << '"';
    return;
  }
  case ProfileValue::Type::NUMBER: {
    // The shortest of 15, 16 or 17 significant digits that reads back as the same double.
    char digits[32];
    for (int precision = 15; precision <= 17; ++precision) {
      std::snprintf(digits, sizeof digits, "%.*g", precision, value.asDouble());
      if (std::strtod(digits, nullptr) == value.asDouble())
        break;
    }
    out << digits;
    return;
  }
  case ProfileValue::Type::BOOLEAN:
    out << (value.asBool() ? "true" : "false");
    return;
  case ProfileValue::Type::MAP: {
    out << '{';
    bool first = true;
    for (const auto &[key, member] : value.asMap()) {
      out << (first ? "" : ",");
      newline(depth + 1);
      serializeToJSON(out, ProfileValue(key), prettyPrint, depth + 1);
      out << (prettyPrint ? ": " : ":");
      serializeToJSON(out, member, prettyPrint, depth + 1);
      first = false;
    }
    if (!first)
      newline(depth);
    out << '}';
    return;
  }
  case ProfileValue::Type::VECTOR: {
    out << '[';
    bool first = true;
    for (const ProfileValue &element : value.asVector()) {
      out << (first ? "" : ",");
      newline(depth + 1);
      serializeToJSON(out, element, prettyPrint, depth + 1);
      first = false;
    }
    if (!first)
      newline(depth);
    out << ']';
    return;
  }
  }
}

} // namespace aspen
