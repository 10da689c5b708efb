// The gates of a basic LSTM cell (popnn's LstmDef.hpp) and how they are named.
//
// A cell order is a permutation of the four gates: cellOrder[i] is the gate whose weights,
// biases and weight gradients sit in slot i of dimension 0. Names (operator<< / operator>>, and
// the --cell-order flag of lstm_layer): forget, input, cell (the candidate), output.
#pragma once

#include <aspen/Export.hpp>

#include <iosfwd>
#include <string>

namespace aspen::nn::lstm {

enum BasicLstmCellUnit {
  BASIC_LSTM_CELL_FORGET_GATE = 0,
  BASIC_LSTM_CELL_INPUT_GATE = 1,
  BASIC_LSTM_CELL_CANDIDATE = 2,
  BASIC_LSTM_CELL_OUTPUT_GATE = 3,
  BASIC_LSTM_CELL_NUM_UNITS = 4
};

// "forget", "input", "cell", "output"; raises invalid_option for BASIC_LSTM_CELL_NUM_UNITS or
// another value.
ASPEN_API std::string asString(BasicLstmCellUnit unit);
// Reads one of those names; raises invalid_option naming the allowed names otherwise.
ASPEN_API BasicLstmCellUnit parseBasicLstmCellUnit(const std::string &name);
ASPEN_API std::ostream &operator<<(std::ostream &os, BasicLstmCellUnit unit);
// Sets failbit on an unknown name.
ASPEN_API std::istream &operator>>(std::istream &is, BasicLstmCellUnit &unit);

} // namespace aspen::nn::lstm
