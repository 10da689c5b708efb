// libaspen's side of the MPI transport: startMpi and joinMpi open the plugin libaspen_mpi.so
// (MpiPlugin.hpp) the first time an engine needs it. libaspen itself never links libmpi.
#include "engine/mpi/MpiPlugin.hpp"
#include "support/LibraryCodelets.hpp" // aspenLibraryFolder, aspenRunsFromBuildTree

#include <aspen/Distributed.hpp>
#include <aspen/Error.hpp>

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace aspen {

bool dist::mpiBuilt() { return ASPEN_HAVE_MPI != 0; }

namespace detail {

namespace {

// $ASPEN_MPI_PLUGIN when set; the build tree's plugin when libaspen is the build tree's; else
// <folder of libaspen>/aspen/libaspen_mpi.so (the installed layout).
std::string pluginPath() {
  if (const char *env = std::getenv("ASPEN_MPI_PLUGIN"); env && *env)
    return env;
  if (aspenRunsFromBuildTree())
    return ASPEN_MPI_PLUGIN_BUILD_PATH;
  return aspenLibraryFolder() + "/" + ASPEN_MPI_PLUGIN_INSTALL_NAME;
}

// The plugin's table, opened once; aspen::error saying why not (the same on every call).
const MpiPlugin &plugin() {
  static std::once_flag once;
  static const MpiPlugin *table = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    if (!dist::mpiBuilt()) {
      failure = "this Aspen was built without MPI (ASPEN_MPI=OFF, or libopenmpi-dev was "
                "missing when it was configured)";
      return;
    }
    const std::string path = pluginPath();
    // RTLD_GLOBAL: OpenMPI opens components of its own that look for libmpi's symbols there.
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    if (!handle) {
      const char *why = dlerror();
      failure = "Aspen's MPI transport " + path + " cannot be loaded (" +
                (why ? why : "no reason given") +
                "): install the MPI it was built with (Debian: libopenmpi3), or point "
                "ASPEN_MPI_PLUGIN at the plugin";
      return;
    }
    using Entry = const MpiPlugin *(*)();
    const auto entry = reinterpret_cast<Entry>(dlsym(handle, kMpiPluginEntry));
    const MpiPlugin *found = entry ? entry() : nullptr;
    if (!found || found->version != kMpiPluginVersion || !found->start || !found->join) {
      failure = "Aspen's MPI transport " + path + " is not this Aspen's (" +
                (!entry ? std::string("no ") + kMpiPluginEntry
                        : "version " + std::to_string(found ? found->version : 0) +
                              ", this Aspen needs " + std::to_string(kMpiPluginVersion)) +
                "): a plugin left from another install?";
      return;
    }
    table = found;
  });
  if (!table)
    throw error("Engine: this graph's replicas are spread over the ranks of an MPI launch, "
                "and " + failure);
  return *table;
}

} // namespace

void startMpi() { plugin().start(); }

std::unique_ptr<CollectiveTransport> joinMpi(const MpiJoin &join) {
  return std::unique_ptr<CollectiveTransport>(plugin().join(join));
}

} // namespace detail

} // namespace aspen
