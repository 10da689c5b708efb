// Text generation of the host wrapper: entry points, field records and the library record.
#include "WrapperGenerator.hpp"

#include "HostCompiler.hpp"

#include <aspen/detail/VertexWrapper.hpp>

#include <sstream>

namespace aspen::detail {

namespace {

// A raw string literal holding `text`, with a delimiter that does not occur in it.
std::string rawStringLiteral(const std::string &text) {
  std::string delimiter = "aspen";
  for (unsigned i = 0; text.find(")" + delimiter + "\"") != std::string::npos; ++i)
    delimiter = "aspen" + std::to_string(i);
  return "R\"" + delimiter + "(" + text + ")" + delimiter + "\"";
}

// Entry points, field records and vertex record of vertex k, inside the vertex's namespace so
// that its template arguments mean what they meant where it was instantiated. Every class gets
// both a vertex entry and a block entry; the one that does not fit its kind returns 0 and is
// never called (the record's isBlockVertex says which is real).
void writeVertex(std::ostringstream &out, std::size_t k, const ParsedVertex &vertex) {
  const std::string &type = vertex.qualifiedType;
  const std::string bind = "aspen_bind_" + std::to_string(k);
  out << "// " << vertex.name << "\n";
  if (!vertex.scope.empty())
    out << "namespace " << vertex.scope << " {\n";
  out << "static void " << bind << "(" << type
      << " &vertex, const ::aspen::detail::FieldDesc *fields) {\n";
  for (std::size_t f = 0; f < vertex.fields.size(); ++f)
    out << "  ::aspen::detail::bindField(vertex." << vertex.fields[f].name << ", fields[" << f
        << "]);\n";
  if (vertex.fields.empty())
    out << "  (void)vertex;\n  (void)fields;\n";
  out << "}\n"
      << "extern \"C\" __attribute__((visibility(\"default\"))) int " << entrySymbol(k)
      << "(const ::aspen::detail::FieldDesc *fields, unsigned workerId, unsigned numWorkers) {\n"
      << "  ::aspen::detail::VertexStorage<" << type << "> storage;\n"
      << "  " << bind << "(storage.vertex(), fields);\n"
      << "  return ::aspen::detail::runCompute(storage.vertex(), workerId, numWorkers);\n}\n"
      << "extern \"C\" __attribute__((visibility(\"default\"))) int " << blockEntrySymbol(k)
      << "(const ::aspen::detail::FieldDesc *fields, const ::aspen::detail::BlockState *thread) "
         "{\n"
      << "  ::aspen::detail::VertexStorage<" << type << "> storage;\n"
      << "  " << bind << "(storage.vertex(), fields);\n"
      << "  return ::aspen::detail::runBlockCompute(storage.vertex(), thread);\n}\n";
  if (!vertex.fields.empty()) {
    out << "static constexpr ::aspen::detail::CodeletFieldRecord aspen_fields_" << k << "[] = {\n";
    for (const ParsedField &field : vertex.fields)
      out << "  ::aspen::detail::fieldRecord<decltype(" << type << "::" << field.name << ")>(\""
          << field.name << "\"),\n";
    out << "};\n";
  }
  out << "static constexpr ::aspen::detail::CodeletVertexRecord aspen_vertex_record_" << k
      << " = {\"" << vertex.name << "\", \"" << entrySymbol(k) << "\", \"" << vertex.scope
      << "\", ::aspen::detail::isMultiVertex<" << type << ">(), ::aspen::detail::isBlockVertex<"
      << type << ">(), \"" << blockEntrySymbol(k) << "\", " << vertex.fields.size() << ", "
      << (vertex.fields.empty() ? std::string("nullptr") : "aspen_fields_" + std::to_string(k))
      << ", ::aspen::detail::declaresCoResident<" << type
      << ">(), ::aspen::detail::declaredMaxThreadsPerBlock<" << type << ">()};\n";
  if (!vertex.scope.empty())
    out << "} // namespace " << vertex.scope << "\n";
  out << "\n";
}

} // namespace

std::string entrySymbol(std::size_t vertexIndex) {
  return "aspen_vertex_" + std::to_string(vertexIndex);
}

std::string blockEntrySymbol(std::size_t vertexIndex) {
  return "aspen_block_vertex_" + std::to_string(vertexIndex);
}

std::string generateWrapper(const std::string &sourcePath, const std::string &source,
                            const std::vector<ParsedVertex> &vertices,
                            const std::string &contentHash, const std::string &compileFlags) {
  std::ostringstream out;
  out << "#line 1 \"" << escapeForStringLiteral(sourcePath) << "\"\n" << source;
  if (!source.empty() && source.back() != '\n')
    out << '\n';
  out << "#line 1 \"<aspen wrapper of " << escapeForStringLiteral(sourcePath) << ">\"\n"
      << "#include <aspen/detail/VertexWrapper.hpp>\n\n";
  for (std::size_t k = 0; k < vertices.size(); ++k)
    writeVertex(out, k, vertices[k]);

  out << "static constexpr ::aspen::detail::CodeletVertexRecord aspen_vertices[] = {\n";
  for (std::size_t k = 0; k < vertices.size(); ++k)
    out << "  " << (vertices[k].scope.empty() ? "" : "::" + vertices[k].scope)
        << "::aspen_vertex_record_" << k << ",\n";
  if (vertices.empty())
    out << "  {nullptr, nullptr, nullptr, 0, 0, nullptr, 0, nullptr},\n";
  out << "};\n\n"
      << "static const char aspen_source_name[] = \"" << escapeForStringLiteral(sourcePath)
      << "\";\n"
      << "static const char aspen_source[] = " << rawStringLiteral(source) << ";\n\n"
      << "extern \"C\" __attribute__((visibility(\"default\"))) const "
         "::aspen::detail::CodeletLibraryRecord *"
      << kCodeletLibrarySymbol << "() {\n"
      << "  static const ::aspen::detail::CodeletLibraryRecord record = {" << kCodeletFormatVersion
      << ", aspen_source_name, aspen_source, \"" << contentHash << "\", "
      << rawStringLiteral(compileFlags) << ", " << vertices.size()
      << ", aspen_vertices};\n"
      << "  return &record;\n}\n";
  return out.str();
}

} // namespace aspen::detail
