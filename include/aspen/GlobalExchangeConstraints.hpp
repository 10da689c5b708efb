// GlobalExchangeFlow and GlobalExchangeConstraint: Poplar's description of the links between the
// IPUs of a model (IPUModel::globalExchangeConstraints, Target::getGlobalExchangeConstraints).
// A constraint bounds the data rate of a set of flows (source IPU -> destination IPU) that share
// a link: together they move at most `bandwidth` bits per second.
#pragma once

#include <aspen/ArrayRef.hpp>

#include <tuple>
#include <vector>

namespace aspen {

struct GlobalExchangeFlow {
  GlobalExchangeFlow(unsigned src, unsigned dst) : src(src), dst(dst) {}
  unsigned src;
  unsigned dst;

  bool operator==(const GlobalExchangeFlow &other) const {
    return src == other.src && dst == other.dst;
  }
  bool operator!=(const GlobalExchangeFlow &other) const { return !(*this == other); }
  bool operator<(const GlobalExchangeFlow &other) const {
    return std::tie(src, dst) < std::tie(other.src, other.dst);
  }
};

struct GlobalExchangeConstraint {
  GlobalExchangeConstraint(double bandwidth, ArrayRef<GlobalExchangeFlow> flows)
      : bandwidth(bandwidth), flows(flows.begin(), flows.end()) {}
  double bandwidth; // bits per second
  std::vector<GlobalExchangeFlow> flows;

  bool operator==(const GlobalExchangeConstraint &other) const {
    return bandwidth == other.bandwidth && flows == other.flows;
  }
  bool operator!=(const GlobalExchangeConstraint &other) const { return !(*this == other); }
  bool operator<(const GlobalExchangeConstraint &other) const {
    return std::tie(bandwidth, flows) < std::tie(other.bandwidth, other.flows);
  }
};

} // namespace aspen
