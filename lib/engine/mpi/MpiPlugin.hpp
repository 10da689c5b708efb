// The MPI transport as a plugin: libaspen_mpi.so (MpiRuntime.cpp, MpiTransport.cpp and its own
// copy of CollectiveMath.cpp), the only Aspen file linked to libmpi. libaspen opens it with
// dlopen when an engine's replicas are spread over the ranks of an MPI launch (MpiLoader.cpp),
// so that a program that never uses the MPI transport never loads libmpi, and one that brings
// its own MPI (another implementation, another version) does not get a second one with
// libaspen. Its one exported symbol, kMpiPluginEntry, returns the table below.
#pragma once

#include "engine/mpi/MpiTransport.hpp"

namespace aspen::detail {

// Bumped whenever the table, MpiJoin or CollectiveTransport changes: libaspen refuses a plugin
// of another version (one left from an older install).
inline constexpr unsigned kMpiPluginVersion = 1;

struct MpiPlugin {
  unsigned version = kMpiPluginVersion;
  void (*start)() = nullptr;                              // startMpi
  CollectiveTransport *(*join)(const MpiJoin &) = nullptr; // joinMpi (the caller owns it)
};

// The exported entry point's name: extern "C" const MpiPlugin *aspen_mpi_plugin(void).
inline constexpr const char *kMpiPluginEntry = "aspen_mpi_plugin";

} // namespace aspen::detail
