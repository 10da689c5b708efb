// DebugContext: the name a caller gives to what it creates. Implicitly made from a string, and
// nested as {parent, "suffix"}; the path ("parent/suffix") appears in errors and profiles.
//
// DebugInfo: what an operation records about itself under its DebugContext's path (Poplar's
// class, which PopLibs' operations derive from): a unique id, the layer that made it
// ("poplibs", ...) and named values (setValue). Aspen keeps the values in the object, where
// getValue reads them; it writes no debug-information file (Poplar's debug.cbor). A DebugInfo
// passed where a DebugContext is expected names its sub-operations under its path.
#pragma once

#include <aspen/ArrayRef.hpp>
#include <aspen/Export.hpp>
#include <aspen/ProfileValue.hpp>

#include <cstdint>
#include <map>
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

using DebugId = std::uint64_t;

class DebugInfo;

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
  inline DebugContext(const DebugInfo &parent, std::string_view suffix = {});

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

class ASPEN_API DebugInfo {
public:
  DebugInfo(const DebugContext &debugContext, std::string layer);
  DebugInfo(const DebugInfo &) = delete;
  DebugInfo &operator=(const DebugInfo &) = delete;
  virtual ~DebugInfo();

  // Unique among the DebugInfos of the process, counting from 1.
  DebugId getId() const { return id_; }
  std::string getPathName() const { return path_; }
  const std::string &getLayer() const { return layer_; }
  // Records `value` under `name` unless the name is set already (then returns false and keeps
  // the first value, as Poplar does).
  bool setValue(std::string name, ProfileValue value);
  // The value recorded under `name`, or nullptr.
  const ProfileValue *getValue(const std::string &name) const;

private:
  DebugId id_;
  std::string path_;
  std::string layer_;
  std::map<std::string, ProfileValue> values_;
};

inline DebugContext::DebugContext(const DebugInfo &parent, std::string_view suffix)
    : path_(parent.getPathName()) {
  append(suffix);
}

} // namespace aspen
