// NonLinearityType is popnn's own type: operators a program declares in namespace popnn are
// found by argument-dependent lookup (here from a template in another namespace, as
// boost::program_options' lexical_cast finds them), and a program's own asString is not
// ambiguous with Aspen's.
#include <popnn/NonLinearity.hpp>
#include <popnn/NonLinearityDef.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

namespace popnn {
std::istream &operator>>(std::istream &in, NonLinearityType &type) {
  std::string token;
  in >> token;
  type = token == "tanh" ? NonLinearityType::TANH : NonLinearityType::RELU;
  return in;
}
std::ostream &operator<<(std::ostream &os, const NonLinearityType &type) {
  return os << (type == NonLinearityType::TANH ? "my-tanh" : "my-other");
}
} // namespace popnn

using namespace popnn;

const char *asString(NonLinearityType type) {
  return type == NonLinearityType::SIGMOID ? "my-sigmoid" : "my-other";
}

namespace parsing {
template <class T> T lexicalCast(const std::string &text) {
  std::istringstream in(text);
  T value{};
  in >> value;
  return value;
}
template <class T> std::string print(const T &value) {
  std::ostringstream out;
  out << value;
  return out.str();
}
} // namespace parsing

int main() {
  NonLinearityType t = parsing::lexicalCast<NonLinearityType>("tanh");
  std::string printed = parsing::print(t);
  std::string named = asString(NonLinearityType::SIGMOID);
  bool ok = t == NonLinearityType::TANH && printed == "my-tanh" && named == "my-sigmoid";
  std::cout << (ok ? "popnn_adl ok" : "popnn_adl FAILED: " + printed + " " + named) << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
