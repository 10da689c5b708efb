// popops::Operation's stream operators, as PopLibs' reduce_op parses --operation with them:
// PopLibs writes and reads the enumerator names ("SQUARE_ADD"); Aspen also reads the lower-case
// spellings with '-' ("square-add"). Unknown words throw poplibs_error naming the word.
// <popops/OperationDefUtil.hpp>: asString in words and the templateVertex spelling.
#include <popops/OperationDefUtil.hpp>
#include <popops/Reduce.hpp>
#include <poputil/VertexTemplates.hpp>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

int main() {
  using popops::Operation;
  std::istringstream in("SQUARE_ADD logical-or log_add Max LOGICAL_AND");
  Operation a{}, b{}, c{}, d{}, e{};
  in >> a >> b >> c >> d >> e;
  std::ostringstream out;
  out << a << " " << b << " " << c << " " << d << " " << e << " " << Operation::MUL;
  bool ok = out.str() == "SQUARE_ADD LOGICAL_OR LOG_ADD MAX LOGICAL_AND MUL";
  ok = ok && a == Operation::SQUARE_ADD && b == Operation::LOGICAL_OR &&
       c == Operation::LOG_ADD && d == Operation::MAX && e == Operation::LOGICAL_AND;
  std::string message;
  try {
    std::istringstream bad("SQUARE__ADD");
    bad >> a;
  } catch (const poputil::poplibs_error &error) {
    message = error.what();
  }
  ok = ok && message.find("'SQUARE__ADD'") != std::string::npos &&
       message.find("LOG_ADD") != std::string::npos && a == Operation::SQUARE_ADD;
  ok = ok && std::strcmp(poputil::asString(Operation::LOGICAL_AND), "Logical And") == 0 &&
       std::strcmp(poputil::asString(Operation::LOG_ADD), "Log Add") == 0 &&
       std::strcmp(poputil::asString(Operation::ADD), "Add") == 0;
  ok = ok && poputil::templateVertex("popops::Reduce", Operation::SQUARE_ADD, poplar::FLOAT) ==
                 "popops::Reduce<popops::Operation::SQUARE_ADD,float>";
  std::cout << (ok ? "operation_streams ok"
                   : "operation_streams FAILED: " + out.str() + " / " + message)
            << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
