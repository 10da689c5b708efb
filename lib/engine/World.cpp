// aspen::dist::World (aspen/Distributed.hpp): the launch, read from the environment.
#include <aspen/Distributed.hpp>
#include <aspen/Error.hpp>

#include <cstdlib>
#include <optional>

namespace aspen::dist {

namespace {

// Environment variable `name` as a whole number; nullopt when unset.
std::optional<unsigned> numberFrom(const char *name) {
  const char *text = std::getenv(name);
  if (!text)
    return std::nullopt;
  const std::string value(text);
  if (value.empty() || value.size() > 9 || value.find_first_not_of("0123456789") != value.npos)
    throw error("dist::World::fromEnvironment: environment variable " + std::string(name) +
                " = '" + value + "' is not a whole number");
  return unsigned(std::stoul(value));
}

// The launch whose variables are `rank`, `size`, `localRank`, `localSize`, if `rank` is set.
bool readLaunch(const char *rank, const char *size, const char *localRank, const char *localSize,
                unsigned &r, unsigned &n, unsigned &lr, unsigned &ln) {
  const std::optional<unsigned> theRank = numberFrom(rank), theSize = numberFrom(size);
  if (!theRank || !theSize)
    return false;
  if (*theSize == 0 || *theRank >= *theSize)
    throw error("dist::World::fromEnvironment: " + std::string(rank) + " = " +
                std::to_string(*theRank) + " is not a rank of " + size + " = " +
                std::to_string(*theSize));
  r = *theRank;
  n = *theSize;
  lr = numberFrom(localRank).value_or(0);
  ln = numberFrom(localSize).value_or(1);
  if (ln == 0 || lr >= ln)
    throw error("dist::World::fromEnvironment: " + std::string(localRank) + " = " +
                std::to_string(lr) + " is not a rank of " + localSize + " = " +
                std::to_string(ln));
  return true;
}

} // namespace

World World::fromEnvironment() {
  World w;
  if (readLaunch("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                 "OMPI_COMM_WORLD_LOCAL_SIZE", w.rank_, w.size_, w.localRank_, w.localSize_))
    w.launcher_ = "mpirun";
  else if (readLaunch("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", w.rank_,
                      w.size_, w.localRank_, w.localSize_))
    w.launcher_ = "pmi";
  else if (readLaunch("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", w.rank_, w.size_,
                      w.localRank_, w.localSize_))
    w.launcher_ = "torchrun";
  return w;
}

bool World::hasMpi() const {
  return mpiBuilt() && (launcher_ == "mpirun" || launcher_ == "pmi");
}

unsigned World::localReplicas(unsigned replicationFactor) const {
  if (replicationFactor % size_ != 0)
    throw invalid_option(
        "dist::World: a graph replicated " + std::to_string(replicationFactor) +
        " ways does not divide among the " + std::to_string(size_) + " ranks of this launch (" +
        launcher_ + "): launch a number of ranks that divides " +
        std::to_string(replicationFactor) +
        ", or give each rank its replicas (target.firstRuntimeReplica, "
        "target.numberRuntimeReplica)");
  return replicationFactor / size_;
}

unsigned World::firstReplica(unsigned replicationFactor) const {
  return rank_ * localReplicas(replicationFactor);
}

} // namespace aspen::dist
