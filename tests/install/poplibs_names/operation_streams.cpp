// popops::Operation's stream operators, as PopLibs' reduce_op parses --operation with them.
#include <popops/Reduce.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

int main() {
  using popops::Operation;
  std::istringstream in("square-add logical-or log-add max");
  Operation a{}, b{}, c{}, d{};
  in >> a >> b >> c >> d;
  std::ostringstream out;
  out << a << " " << b << " " << c << " " << d << " " << Operation::MUL;
  bool threw = false;
  try {
    std::istringstream bad("square_add");
    bad >> a;
  } catch (const poputil::poplibs_error &) {
    threw = true;
  }
  bool ok = out.str() == "square-add logical-or log-add max mul" && threw &&
            b == Operation::LOGICAL_OR;
  std::cout << (ok ? "operation_streams ok" : "operation_streams FAILED: " + out.str()) << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
