#include <aspen/DebugContext.hpp>

#include <atomic>

namespace aspen {

namespace {
DebugId nextDebugId() {
  static std::atomic<DebugId> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
} // namespace

DebugInfo::DebugInfo(const DebugContext &debugContext, std::string layer)
    : id_(nextDebugId()), path_(debugContext.getPathName()), layer_(std::move(layer)) {}

DebugInfo::~DebugInfo() = default;

bool DebugInfo::setValue(std::string name, ProfileValue value) {
  return values_.emplace(std::move(name), std::move(value)).second;
}

const ProfileValue *DebugInfo::getValue(const std::string &name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

} // namespace aspen
