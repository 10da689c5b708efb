// The launch a process belongs to: aspen::dist::World reads what mpirun/mpiexec (OpenMPI's
// OMPI_COMM_WORLD_*, MPICH's and Slurm's PMI_*) or torchrun (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE) put in the environment, PopDist's accessors in Aspen's words.
//
// An engine of a replicated graph (Graph(target, replication_factor(r))) launched as rank k of
// n ranks over MPI runs replicas [k·r/n, (k+1)·r/n) by default, and its collectives meet the
// other ranks' over MPI (engine option aspen.collectives.transport, docs/architecture.md
// "Replicated graphs"). Nothing here starts MPI: the engine does, when it first needs it.
#pragma once

#include <aspen/Export.hpp>

#include <string>

namespace aspen::dist {

class ASPEN_API World {
public:
  // One process, no launcher.
  World() = default;
  // The launch this process was started by; a process that no launcher started is rank 0 of 1.
  // A launcher variable that is not a number, or a rank past the size, raises aspen::error
  // naming the variable.
  static World fromEnvironment();

  unsigned rank() const { return rank_; }
  unsigned size() const { return size_; }
  // This process among the ranks on its machine.
  unsigned localRank() const { return localRank_; }
  unsigned localSize() const { return localSize_; }
  // "mpirun" (OpenMPI), "pmi" (MPICH, Slurm), "torchrun", or "" for none.
  const std::string &launcher() const { return launcher_; }
  // Whether the ranks can meet over MPI: an MPI launch (mpirun or PMI) and a build with MPI.
  bool hasMpi() const;

  // PopDist's names: the instance is the rank.
  unsigned instanceIndex() const { return rank_; }
  unsigned numInstances() const { return size_; }
  // The replicas of a graph replicated `replicationFactor` ways this rank runs by default:
  // [firstReplica, firstReplica + localReplicas). invalid_option when the ranks do not divide
  // the replicas.
  unsigned localReplicas(unsigned replicationFactor) const;
  unsigned firstReplica(unsigned replicationFactor) const;

private:
  unsigned rank_ = 0, size_ = 1, localRank_ = 0, localSize_ = 1;
  std::string launcher_;
};

// Whether this build of Aspen has the MPI transport (CMake option ASPEN_MPI): the plugin
// <libdir>/aspen/libaspen_mpi.so, which libaspen opens when an engine first needs MPI (an
// aspen::error then names the file and why, if it cannot be loaded: its libmpi missing).
ASPEN_API bool mpiBuilt();

} // namespace aspen::dist
