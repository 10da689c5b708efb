// <popnn/NonLinearityDefUtil.hpp>: asString, the stream operators and the templateVertex
// spelling of NonLinearityType, as PopLibs has them; VertexTemplateToString specialised by a
// program for its own enum, in namespace poputil as PopLibs programs write it.
#include <popnn/NonLinearityDefUtil.hpp>
#include <poputil/VertexTemplates.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

enum class Mode { Fast, Exact };
namespace poputil {
template <> struct VertexTemplateToString<Mode> {
  static std::string to_string(const Mode &m) { return m == Mode::Fast ? "Mode::Fast" : "Mode::Exact"; }
};
} // namespace poputil

int main() {
  using popnn::NonLinearityType;
  std::istringstream in("softmax_stable gelu");
  NonLinearityType a{}, b{};
  in >> a >> b;
  std::ostringstream out;
  out << a << "|" << b << "|" << popnn::asString(NonLinearityType::RELU);
  std::string vertex = poputil::templateVertex("popnn::NonLinearity", poplar::HALF,
                                               NonLinearityType::TANH, Mode::Exact, 3u, true);
  bool threw = false;
  try {
    std::istringstream bad("nonsense");
    bad >> a;
  } catch (const poputil::poplibs_error &) {
    threw = true;
  }
  bool ok = out.str() == "softmax (stable)|gelu|relu" &&
            vertex == "popnn::NonLinearity<half,popnn::NonLinearityType::TANH,Mode::Exact,3,true>" &&
            threw;
  std::cout << (ok ? "nonlinearity_def_util ok"
                   : "nonlinearity_def_util FAILED: " + out.str() + " " + vertex)
            << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
