// The MPI transport of the collectives (no mpi.h here): an engine of a replicated graph whose
// replicas are spread over the ranks of an MPI launch joins the same engine on the other ranks
// at load, and its collectives then meet theirs over MPI.
#pragma once

#include "engine/Transport.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace aspen::detail {

struct MpiJoin {
  // fingerprint(CompiledGraph) and its collectives, one line each (collective::describe).
  std::uint64_t fingerprint = 0;
  std::vector<std::string> schedule;
  unsigned replicationFactor = 1;
  unsigned firstReplica = 0, localReplicas = 1; // this rank's
  double timeoutSeconds = 600;
};

// Starts MPI for the process if nobody has (an engine over MPI calls it when it is made, so that
// MPI's own start, which waits for every rank under OpenMPI, is behind it before any deadline
// of Aspen's runs). Raises aspen::error in a build without MPI.
void startMpi();

// Joins this engine to the engine each other rank loads as its same-numbered one (engines join
// in the same order on every rank). Every rank checks that the ranks' replicas tile the graph's
// in rank order and that their executables are the same (naming the first collective that
// differs, and both sides), and raises aspen::error on every rank if not; a rank that does not
// join within the timeout is named. Raises aspen::error in a build without MPI.
std::unique_ptr<CollectiveTransport> joinMpi(const MpiJoin &join);

} // namespace aspen::detail
