// Poplar's ReplicatedStreamMode: how a host-to-device stream of a replicated graph
// (Graph::addHostToDeviceFIFO) reaches the replicas.
#pragma once

namespace aspen {

enum class ReplicatedStreamMode {
  REPLICATE, // a stream per replica
  BROADCAST, // one stream whose data every replica receives
};

} // namespace aspen
