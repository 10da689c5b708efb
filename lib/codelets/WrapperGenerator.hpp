// The host wrapper translation unit of a codelet file.
//
// It contains the user's source under `#line 1 "<path>"` (so diagnostics point into the user's
// file), then for vertex k an `extern "C" int aspen_vertex_<k>(const FieldDesc *, unsigned
// workerId, unsigned numWorkers)` that binds each field in place and calls compute(), and the
// function `aspen_codelet_library` returning the metadata records (VertexWrapper.hpp), whose
// field directions, shapes and element types come from decltype of each member. The records keep
// what the GPU wrapper (lib/executors/cuda) needs besides: each vertex's scope and the flags.
#pragma once

#include "CodeletParser.hpp"

#include <string>
#include <vector>

namespace aspen::detail {

std::string entrySymbol(std::size_t vertexIndex);
// The block entry (BlockEntry, VertexAbi.hpp) of the vertexIndex-th vertex.
std::string blockEntrySymbol(std::size_t vertexIndex);

std::string generateWrapper(const std::string &sourcePath, const std::string &source,
                            const std::vector<ParsedVertex> &vertices,
                            const std::string &contentHash, const std::string &compileFlags);

} // namespace aspen::detail
