// PlanningCache: plans keyed by what determines them, behind a mutex so threads can share one
// cache. Planning runs outside the lock; plans are deterministic, so a race stores equal plans.
#include "linalg/MatMulPlanner.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace aspen::linalg {

struct PlanningCache::Impl {
  // Target numbers, partials type, memory proportion and constraints as text, then params.
  using Key = std::tuple<std::string, MatMulParams>;
  mutable std::mutex mutex;
  std::map<Key, MatMulPlan> plans;
};

PlanningCache::PlanningCache() : impl_(std::make_unique<Impl>()) {}
PlanningCache::~PlanningCache() = default;

std::size_t PlanningCache::size() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->plans.size();
}

void PlanningCache::clear() {
  std::lock_guard lock(impl_->mutex);
  impl_->plans.clear();
}

namespace detail {

MatMulPlan cachedPlan(PlanningCache &cache, const Target &target, const MatMulParams &params,
                      const MatMulOptions &options) {
  PlanningCache::Impl &impl = cache.impl();
  PlanningCache::Impl::Key key{
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", target.getName(),
                  static_cast<int>(target.getTargetType()), target.getNumTiles(),
                  target.getBytesPerTile(), target.getNumWorkerContexts(),
                  target.getExchangeBytesPerCycle(), target.getDataPathWidth(),
                  target.getMatMulMacsPerCycle(FLOAT), target.getMatMulMacsPerCycle(HALF),
                  target.getTileClockFrequency(),
                  options.partialsType.toString(), options.availableMemoryProportion,
                  options.constraints.toJson()),
      params};
  {
    std::lock_guard lock(impl.mutex);
    if (auto it = impl.plans.find(key); it != impl.plans.end())
      return it->second;
  }
  MatMulPlan plan = planMatMul(target, params, options);
  std::lock_guard lock(impl.mutex);
  return impl.plans.emplace(std::move(key), std::move(plan)).first->second;
}

} // namespace detail

} // namespace aspen::linalg
