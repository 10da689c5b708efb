// Finding the precompiled codelet families of Aspen's own libraries (ops, nn, ...). Adding them
// to a graph is the layers' (layersupport/AddLibraryCodelets.hpp): this floor sits below core.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace aspen::detail {

// The folder of the Aspen library this code runs in, or of the program when it links Aspen's
// archives (empty when unknown), and whether that lies in the build tree (then the source
// tree's headers and the build's codelets are the ones to use).
std::string aspenLibraryFolder();
bool aspenRunsFromBuildTree();

// The folder holding the library codelet files: $ASPEN_CODELETS_DIR when set; otherwise, when
// libaspen is the one in the build tree, the build tree's codelets folder; otherwise
// <folder of libaspen>/aspen/codelets (the installed layout).
std::string libraryCodeletsDir();

// Paths of the files "<library>_*.gp" in that folder, sorted. Raises aspen::codelet_error naming
// the library and the folder when there are none.
std::vector<std::string> libraryCodeletFiles(std::string_view library);

} // namespace aspen::detail
