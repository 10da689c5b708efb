// Discovery of vertex classes and their fields in preprocessed codelet source.
//
// Input is the output of `g++ -E` (with linemarkers). Declarations coming from system headers
// and from files under `ignoredDirs` (Aspen's own headers) are ignored. A vertex class is a
// class or struct at namespace scope deriving directly from Vertex, MultiVertex, BlockVertex or
// SupervisorVertex (optionally qualified by aspen:: or poplar::); a class template is a vertex
// type once per explicit instantiation (`template class ns::V<float>;`). Fields are the class's
// non-static data members in declaration order; they must be public (a private or protected
// data member of a vertex class is an error, because the host binds every data member).
// Field types and shapes are taken later from compiled metadata; here only the spelling is kept.
// Malformed source raises codelet_error with file:line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace aspen::detail {

// What the declared type of a member looks like, from its spelling alone.
enum class SpelledFieldKind { Plain, Input, Output, InOut, Vector };

struct ParsedField {
  std::string name;
  std::string typeSpelling; // e.g. "Input<Vector<float>>", without const/volatile/mutable
  SpelledFieldKind kind = SpelledFieldKind::Plain;
  bool isConst = false;
  unsigned line = 0;
};

struct ParsedVertex {
  std::string name;          // normalised qualified name, e.g. "ns::V<float,true>"
  std::string qualifiedType; // how generated code names the class, e.g. "::ns::V<float,true>"
  std::string scope;         // the namespace where qualifiedType is spelled (template arguments
                             // are looked up there), e.g. "ns" or ""
  std::string file;
  unsigned line = 0;
  std::vector<ParsedField> fields;
};

std::vector<ParsedVertex> parseVertexClasses(std::string_view preprocessed,
                                             const std::vector<std::string> &ignoredDirs);

} // namespace aspen::detail
