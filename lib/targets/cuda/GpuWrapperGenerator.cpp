// Text generation of the GPU translation unit: device entries, the dispatch kernel and the
// content hash marker.
#include "GpuWrapperGenerator.hpp"

#include "codelets/HostCompiler.hpp"

#include <aspen/detail/GpuAbi.hpp>

#include <sstream>

namespace aspen::detail {

namespace {

std::string deviceEntry(std::size_t k) { return "aspen_gpu_vertex_" + std::to_string(k); }

// A vertex in zeroed storage with its fields bound from `fields`.
void writeBoundVertex(std::ostringstream &out, const VertexTypeInfo &vertex) {
  out << "  ::aspen::detail::GpuVertexStorage<::" << vertex.name << "> storage;\n"
      << "  auto &vertex = storage.vertex();\n";
  for (std::size_t f = 0; f < vertex.fields.size(); ++f)
    out << "  ::aspen::detail::gpuBindField(vertex." << vertex.fields[f].name << ", fields[" << f
        << "]);\n";
}

// The entry of vertex k, inside the vertex's scope so that its template arguments mean what
// they meant where it was instantiated. Not inlined: one kernel dispatches to every class.
void writeEntry(std::ostringstream &out, std::size_t k, const VertexTypeInfo &vertex) {
  out << "// " << vertex.name << "\n";
  if (!vertex.scope.empty())
    out << "namespace " << vertex.scope << " {\n";
  out << "__device__ __noinline__ int " << deviceEntry(k)
      << "(const ::aspen::detail::FieldDesc *fields, unsigned workerId) {\n";
  writeBoundVertex(out, vertex);
  out << "  return ::aspen::detail::gpuRunCompute(vertex, workerId);\n}\n";
  if (!vertex.scope.empty())
    out << "} // namespace " << vertex.scope << "\n";
  out << "\n";
}

// The kernel of block codelet k (GpuAbi.hpp), inside the vertex's scope.
void writeBlockKernel(std::ostringstream &out, std::size_t k, const VertexTypeInfo &vertex) {
  out << "// " << vertex.name << ", a block codelet\n";
  if (!vertex.scope.empty())
    out << "namespace " << vertex.scope << " {\n";
  // A declared maxThreadsPerBlock bounds the kernel's blocks, which lets it use more registers.
  const std::string bound = vertex.maxThreadsPerBlock != 0
                                ? std::to_string(vertex.maxThreadsPerBlock)
                                : std::string("ASPEN_GPU_MAX_THREADS_PER_BLOCK");
  out << "extern \"C\" __global__ void __launch_bounds__(" << bound << ", 1)\n"
      << ASPEN_GPU_BLOCK_KERNEL_PREFIX << k
      << "(const ::aspen::detail::FieldDesc *fields, unsigned long long sharedBytes,\n"
      << "    unsigned *failedVertex, ::aspen::detail::GridState *grid) {\n"
      << "  extern __shared__ __align__(16) unsigned char aspenShared[];\n";
  writeBoundVertex(out, vertex);
  out << "  if (!::aspen::detail::gpuRunBlockCompute(vertex, ::aspen::Block(aspenShared, "
         "sharedBytes, grid)))\n"
      << "    ::aspen::detail::gpuReportFailure(failedVertex, 0);\n"
      << "}\n";
  if (!vertex.scope.empty())
    out << "} // namespace " << vertex.scope << "\n";
  out << "\n";
}

// One case of the dispatch switch: a MultiVertex on every thread of the block, a Vertex on the
// thread its position in the tile selects; a block codelet is never dispatched.
void writeCase(std::ostringstream &out, std::size_t k, const VertexTypeInfo &vertex) {
  const std::string entry =
      (vertex.scope.empty() ? "::" : "::" + vertex.scope + "::") + deviceEntry(k);
  out << "    case " << k << ":\n";
  if (vertex.isBlockVertex) {
    out << "      __trap(); // run by its own kernel (program::Launch)\n";
  } else if (vertex.isMultiVertex) {
    // Threads that skipped a single-thread vertex meet the one that ran it here.
    out << "      __syncwarp(::aspen::detail::gpuWarpLanes());\n"
        << "      ok = " << entry << "(fields + record.firstField, threadIdx.x);\n";
  } else {
    out << "      if ((v - tile.begin) % blockDim.x != threadIdx.x)\n"
        << "        continue;\n"
        << "      ok = " << entry << "(fields + record.firstField, 0);\n";
  }
  out << "      break;\n";
}

} // namespace

std::string generateGpuWrapper(const CodeletLibrary &library) {
  const std::string &source = library.source();
  const std::string name = escapeForStringLiteral(library.sourceName());
  std::ostringstream out;
  out << "#line 1 \"" << name << "\"\n" << source;
  if (!source.empty() && source.back() != '\n')
    out << '\n';
  out << "#line 1 \"<aspen gpu wrapper of " << name << ">\"\n"
      << "#include <aspen/detail/GpuWrapper.hpp>\n\n";
  const std::vector<VertexTypeInfo> &vertices = library.vertexTypes();
  for (std::size_t k = 0; k < vertices.size(); ++k) {
    if (vertices[k].isBlockVertex)
      writeBlockKernel(out, k, vertices[k]);
    else
      writeEntry(out, k, vertices[k]);
  }

  out << "extern \"C\" __device__ const char aspen_codelets_content_hash[] = \"" << kGpuHashMarker
      << library.contentHash() << "\";\n\n"
      << "extern \"C\" __global__ void\n"
      << "__launch_bounds__(ASPEN_GPU_MAX_THREADS_PER_BLOCK, 1) " << ASPEN_GPU_KERNEL_NAME
      << "(const ::aspen::detail::GpuTileRecord *tiles,\n"
      << "    const ::aspen::detail::GpuVertexRecord *vertices,\n"
      << "    const ::aspen::detail::FieldDesc *fields, unsigned *failedVertex) {\n"
      << "  const ::aspen::detail::GpuTileRecord tile = tiles[blockIdx.x];\n"
      << "  for (unsigned v = tile.begin; v < tile.end; ++v) {\n"
      << "    const ::aspen::detail::GpuVertexRecord record = vertices[v];\n"
      << "    int ok = 1;\n"
      << "    switch (record.type) {\n";
  for (std::size_t k = 0; k < vertices.size(); ++k)
    writeCase(out, k, vertices[k]);
  out << "    default: // a type outside this library: the executor's tables are wrong\n"
      << "      __trap();\n"
      << "    }\n"
      << "    if (!ok)\n"
      << "      ::aspen::detail::gpuReportFailure(failedVertex, v);\n"
      << "  }\n"
      << "}\n";
  return out.str();
}

} // namespace aspen::detail
