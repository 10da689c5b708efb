// Adding the precompiled codelet families of a layer (ops, nn, ...) to a graph: what
// popops::addCodelets does. Layer support (lib/layersupport): header-only over the public Graph
// API; the files are found by the support floor's copy in the library that calls this.
#pragma once

#include "support/LibraryCodelets.hpp"

#include <aspen/Graph.hpp>

#include <string>
#include <string_view>

namespace aspen::detail {

// Adds every codelet family of `library` (its files "<library>_*.gp", see libraryCodeletFiles).
inline void addLibraryCodelets(Graph &graph, std::string_view library) {
  for (const std::string &file : libraryCodeletFiles(library))
    graph.addCodelets(file, CodeletFileType::Precompiled);
}

} // namespace aspen::detail
