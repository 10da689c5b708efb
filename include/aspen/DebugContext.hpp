// DebugContext: the name a caller gives to what it creates. Implicitly made from a string, and
// nested as {parent, "suffix"}; the path ("parent/suffix") appears in errors and profiles.
#pragma once

#include <aspen/ArrayRef.hpp>

#include <cstdint>
#include <string>

namespace aspen {

class DebugNameAndId {
public:
  DebugNameAndId() = default;
  DebugNameAndId(std::string name, std::uint64_t id = 0) : name_(std::move(name)), id_(id) {}
  const std::string &getName() const { return name_; }
  std::uint64_t getId() const { return id_; }

private:
  std::string name_;
  std::uint64_t id_ = 0;
};

class DebugContext {
public:
  DebugContext() = default;
  DebugContext(const char *name) : path_(name ? name : "") {}
  DebugContext(const std::string &name) : path_(name) {}
  DebugContext(std::string_view name) : path_(name) {}
  DebugContext(const DebugContext &parent, std::string_view suffix) : path_(parent.path_) {
    append(suffix);
  }
  DebugContext(const DebugNameAndId &parent, std::string_view suffix = {})
      : path_(parent.getName()) {
    append(suffix);
  }

  // "a/b/c"; empty when no name was given.
  const std::string &getPathName() const { return path_; }
  bool empty() const { return path_.empty(); }

private:
  void append(std::string_view suffix) {
    if (suffix.empty())
      return;
    if (!path_.empty())
      path_ += '/';
    path_.append(suffix);
  }
  std::string path_;
};

} // namespace aspen
