// LayerCache: compiled layers kept by key (kind, sizes, types, options, device), with a size
// bound and statistics; what makes a backend's thousandth call as cheap as running the layer.
//
// get(key, compile) returns the layer of `key`, compiling it with `compile` on a miss. Concurrent
// first calls of one key compile it once: the first caller compiles, the others wait for its
// result (and count as hits). A failed compile is not cached: each waiter sees the error, and the
// next call tries again. Past `capacity` entries the least recently used finished entry is
// dropped; callers still holding it keep it alive until they are done.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace aspen::backend {

struct CacheStats {
  std::uint64_t hits = 0, misses = 0, compiles = 0, compileFailures = 0, evictions = 0;
  std::uint64_t entries = 0, capacity = 0;
  double compileSeconds = 0;
};

template <class Layer> class LayerCache {
public:
  explicit LayerCache(std::size_t capacity) : capacity_(capacity) {}

  std::shared_ptr<Layer> get(const std::string &key,
                             const std::function<std::shared_ptr<Layer>()> &compile) {
    std::shared_future<std::shared_ptr<Layer>> ready;
    std::promise<std::shared_ptr<Layer>> promise;
    bool mine = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = entries_.find(key); it != entries_.end()) {
        ++stats_.hits;
        order_.splice(order_.end(), order_, it->second.position);
        ready = it->second.ready;
      } else {
        ++stats_.misses;
        ready = promise.get_future().share();
        order_.push_back(key);
        entries_.emplace(key, Entry{ready, std::prev(order_.end())});
        mine = true;
        evict();
      }
    }
    if (mine)
      compileInto(key, compile, promise);
    return ready.get(); // rethrows the compile's error
  }

  CacheStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    CacheStats s = stats_;
    s.entries = entries_.size();
    s.capacity = capacity_;
    return s;
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    // Entries still compiling stay: their compiling callers remove or keep them.
    for (auto it = order_.begin(); it != order_.end();) {
      const auto entry = entries_.find(*it);
      if (isReady(entry->second.ready)) {
        entries_.erase(entry);
        it = order_.erase(it);
      } else {
        ++it;
      }
    }
  }

private:
  struct Entry {
    std::shared_future<std::shared_ptr<Layer>> ready;
    std::list<std::string>::iterator position; // in order_, least recently used first
  };

  static bool isReady(const std::shared_future<std::shared_ptr<Layer>> &f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  void compileInto(const std::string &key, const std::function<std::shared_ptr<Layer>()> &compile,
                   std::promise<std::shared_ptr<Layer>> &promise) {
    const auto start = std::chrono::steady_clock::now();
    try {
      std::shared_ptr<Layer> layer = compile();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.compiles;
      stats_.compileSeconds += seconds;
      promise.set_value(std::move(layer));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.compileFailures;
      if (const auto it = entries_.find(key); it != entries_.end()) {
        order_.erase(it->second.position);
        entries_.erase(it);
      }
      promise.set_exception(std::current_exception());
    }
  }

  // Drops least recently used finished entries while there are more than capacity_.
  void evict() {
    for (auto it = order_.begin(); entries_.size() > capacity_ && it != order_.end();) {
      const auto entry = entries_.find(*it);
      if (!isReady(entry->second.ready)) {
        ++it;
        continue;
      }
      entries_.erase(entry);
      it = order_.erase(it);
      ++stats_.evictions;
    }
  }

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  std::list<std::string> order_;
  CacheStats stats_;
};

} // namespace aspen::backend
