// The gates of a basic LSTM cell (popnn's LstmDef.hpp) and how they are named.
//
// A cell order is a permutation of the four gates: cellOrder[i] is the gate whose weights,
// biases and weight gradients sit in slot i of dimension 0. Names (asString and
// parseBasicLstmCellUnit, and the --cell-order flag of lstm_layer): forget, input, cell (the
// candidate), output. The gates' formulas: docs/recurrent.md, "LSTM".
#pragma once

#include <aspen/Export.hpp>

#include <string>

// At global scope, as PopLibs declares it (programs name the gates unqualified), and without
// stream operators, which programs define for themselves.
enum BasicLstmCellUnit {
  BASIC_LSTM_CELL_FORGET_GATE = 0,
  BASIC_LSTM_CELL_INPUT_GATE = 1,
  BASIC_LSTM_CELL_CANDIDATE = 2,
  BASIC_LSTM_CELL_OUTPUT_GATE = 3,
  BASIC_LSTM_CELL_NUM_UNITS = 4
};

namespace aspen::nn::lstm {

using ::BasicLstmCellUnit;
using ::BASIC_LSTM_CELL_FORGET_GATE;
using ::BASIC_LSTM_CELL_INPUT_GATE;
using ::BASIC_LSTM_CELL_CANDIDATE;
using ::BASIC_LSTM_CELL_OUTPUT_GATE;
using ::BASIC_LSTM_CELL_NUM_UNITS;

// "forget", "input", "cell", "output"; raises invalid_option for BASIC_LSTM_CELL_NUM_UNITS or
// another value.
ASPEN_API std::string asString(BasicLstmCellUnit unit);
// Reads one of those names; raises invalid_option naming the allowed names otherwise.
ASPEN_API BasicLstmCellUnit parseBasicLstmCellUnit(const std::string &name);

} // namespace aspen::nn::lstm
