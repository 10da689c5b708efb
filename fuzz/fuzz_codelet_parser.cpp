// The codelet parser (lib/codelets/CodeletParser.cpp) on arbitrary preprocessed text: it finds
// the vertex classes and their fields, or refuses with a codelet_error naming the file and line.
// Checked beyond "no crash": a parse is deterministic, and every vertex and field it reports has
// a name and lies on a line of the input.
#include "FuzzCommon.hpp"

#include "codelets/CodeletParser.hpp"

#include <algorithm>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace aspen;
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  std::vector<detail::ParsedVertex> first;
  if (!fuzz::refusedOrDone([&] { first = detail::parseVertexClasses(text, {"/usr/include"}); }))
    return 0;
  const std::vector<detail::ParsedVertex> again =
      detail::parseVertexClasses(text, {"/usr/include"});
  fuzz::check(again.size() == first.size(), "two parses of one text found different vertices");
  for (std::size_t i = 0; i < first.size(); ++i) {
    const detail::ParsedVertex &v = first[i];
    fuzz::check(v.name == again[i].name && v.fields.size() == again[i].fields.size(),
                "two parses of one text differ in vertex " + v.name);
    fuzz::check(!v.name.empty() && !v.qualifiedType.empty(), "a vertex without a name");
    for (const detail::ParsedField &f : v.fields)
      fuzz::check(!f.name.empty() && !f.typeSpelling.empty(),
                  "vertex " + v.name + " has a field without a name or type");
  }
  return 0;
}
