// PopLibs declares BasicLstmCellUnit and BasicGruCellUnit at global scope with no stream
// operators; its drivers name them unqualified and parse --cell-order with their own operators.
#include <popnn/Gru.hpp>
#include <popnn/Lstm.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace popnn;

std::istream &operator>>(std::istream &is, BasicLstmCellUnit &unit) {
  std::string token;
  is >> token;
  if (token == "forget")
    unit = BASIC_LSTM_CELL_FORGET_GATE;
  else if (token == "input")
    unit = BASIC_LSTM_CELL_INPUT_GATE;
  else if (token == "cell")
    unit = BASIC_LSTM_CELL_CANDIDATE;
  else if (token == "output")
    unit = BASIC_LSTM_CELL_OUTPUT_GATE;
  else
    is.setstate(std::ios::failbit);
  return is;
}
std::ostream &operator<<(std::ostream &os, const BasicLstmCellUnit &unit) {
  return os << "lstm-unit-" << static_cast<int>(unit);
}
std::ostream &operator<<(std::ostream &os, const BasicGruCellUnit &unit) {
  return os << "gru-unit-" << static_cast<int>(unit);
}

int main() {
  std::istringstream in("output forget");
  std::vector<BasicLstmCellUnit> order(2);
  in >> order[0] >> order[1];
  std::ostringstream out;
  out << order[0] << " " << order[1] << " " << BASIC_GRU_CELL_UPDATE_GATE;
  lstm::LstmParams params(poplar::FLOAT, 1, 2, {3, 4});
  params.cellOrder = {BASIC_LSTM_CELL_OUTPUT_GATE, BASIC_LSTM_CELL_FORGET_GATE,
                      BASIC_LSTM_CELL_CANDIDATE, BASIC_LSTM_CELL_INPUT_GATE};
  bool ok = out.str() == "lstm-unit-3 lstm-unit-0 gru-unit-1" && BASIC_LSTM_CELL_NUM_UNITS == 4 &&
            BASIC_GRU_CELL_NUM_UNITS == 3 && params.cellOrder[0] == order[0];
  std::cout << (ok ? "cell_units_global ok" : "cell_units_global FAILED: " + out.str()) << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
