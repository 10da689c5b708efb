// Codelet libraries: vertex classes compiled from a codelet source file for the host.
//
// A source file is preprocessed (with __ASPEN_CODELET__ and __POPC__ defined), its vertex classes
// and their fields are discovered from the source (no registration macro), a wrapper giving
// every vertex class (and every explicit template instantiation) a C entry point and a metadata
// table is generated, and the lot is compiled by the system compiler into a shared object,
// cached by content hash under ASPEN_CACHE_DIR. aspen-cc writes the same shared object ahead of
// time; loadPrecompiled() accepts it.
#pragma once

#include <aspen/Type.hpp>
#include <aspen/detail/VertexAbi.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace aspen::detail {

enum class FieldDirection : std::uint8_t { Plain, Input, Output, InOut };
enum class FieldShape : std::uint8_t { Scalar, Vector, VectorOfVectors };

struct FieldInfo {
  std::string name;
  FieldDirection direction = FieldDirection::Plain;
  FieldShape shape = FieldShape::Scalar;
  Type elementType;           // invalid when the element is not one of Aspen's types
  unsigned elementBytes = 0;  // sizeof the element
  bool isEdge() const { return direction != FieldDirection::Plain; }
  bool writes() const {
    return direction == FieldDirection::Output || direction == FieldDirection::InOut;
  }
  bool reads() const {
    return direction == FieldDirection::Input || direction == FieldDirection::InOut;
  }
};

class CodeletLibrary;

struct VertexTypeInfo {
  std::string name;           // normalised, e.g. "ns::V<float,true>"
  std::string scope;          // the namespace where generated code names the class (template
                              // arguments are looked up there), e.g. "ns" or ""
  bool isMultiVertex = false;
  bool isBlockVertex = false; // run by program::Launch through blockEntry, never through entry
  bool coResident = false;    // a block codelet that runs only in co-resident launches
  unsigned maxThreadsPerBlock = 0; // a block codelet's declared block size limit, or 0
  std::vector<FieldInfo> fields;
  VertexEntry entry = nullptr;      // host entry point
  BlockEntry blockEntry = nullptr; // host entry point of a block codelet's threads
  const CodeletLibrary *library = nullptr;
  // Index of the field called `name`, or -1.
  int fieldIndex(std::string_view name) const;
};

class CodeletLibrary {
public:
  // Compiles source text (path is used for messages, #include lookup and the cache key).
  // Raises codelet_error with the compiler's diagnostics (file:line) on failure.
  static std::shared_ptr<const CodeletLibrary>
  compileSource(const std::string &path, const std::string &source,
                const std::string &extraFlags = {});
  static std::shared_ptr<const CodeletLibrary> compileFile(const std::string &path,
                                                           const std::string &extraFlags = {});
  // A shared object written by aspen-cc (or from serialised bytes of one).
  static std::shared_ptr<const CodeletLibrary> loadPrecompiled(const std::string &path);
  static std::shared_ptr<const CodeletLibrary> loadBinary(const std::vector<std::uint8_t> &bytes);

  ~CodeletLibrary();
  CodeletLibrary(const CodeletLibrary &) = delete;
  CodeletLibrary &operator=(const CodeletLibrary &) = delete;

  const std::vector<VertexTypeInfo> &vertexTypes() const { return types_; }
  const std::string &sourceName() const { return sourceName_; }
  // The codelet source (kept for GPU compilation) and the host shared object's bytes (kept for
  // Executable serialisation).
  const std::string &source() const { return source_; }
  const std::vector<std::uint8_t> &binary() const { return binary_; }
  const std::string &contentHash() const { return hash_; }
  // The extra compiler flags the source was compiled with (its -I/-D/-U apply to GPU compiles).
  const std::string &compileFlags() const { return compileFlags_; }

  struct Impl;

private:
  CodeletLibrary();
  std::vector<VertexTypeInfo> types_;
  std::string sourceName_;
  std::string source_;
  std::vector<std::uint8_t> binary_;
  std::string hash_;
  std::string compileFlags_;
  std::unique_ptr<Impl> impl_; // the loaded shared object
};

// "ns::V< float , true >" -> "ns::V<float,true>": whitespace kept only between identifier
// characters ("unsigned int").
std::string normalizeVertexName(std::string_view name);

// The vertex types a graph knows, by normalised name.
class CodeletRegistry {
public:
  // Adds every vertex type of lib; raises codelet_error when a name is already defined by a
  // different library (adding the same file twice is fine).
  void add(std::shared_ptr<const CodeletLibrary> lib);
  const VertexTypeInfo *find(std::string_view name) const;
  const std::vector<std::shared_ptr<const CodeletLibrary>> &libraries() const { return libs_; }

private:
  std::vector<std::shared_ptr<const CodeletLibrary>> libs_;
  std::unordered_map<std::string, const VertexTypeInfo *> byName_;
};

} // namespace aspen::detail
