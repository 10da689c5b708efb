// A build without MPI (ASPEN_MPI=OFF, or no MPI found): replicas meet in one process only.
#include "engine/mpi/MpiTransport.hpp"

#include <aspen/Distributed.hpp>
#include <aspen/Error.hpp>

namespace aspen {

bool dist::mpiBuilt() { return false; }

void detail::startMpi() { joinMpi({}); }

std::unique_ptr<detail::CollectiveTransport> detail::joinMpi(const MpiJoin &) {
  throw error("Engine::load: this graph's replicas are spread over the ranks of an MPI launch, "
              "and this Aspen was built without MPI (ASPEN_MPI=OFF, or libopenmpi-dev was "
              "missing when it was configured)");
}

} // namespace aspen
