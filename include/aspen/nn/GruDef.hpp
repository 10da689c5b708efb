// The gates of a basic GRU cell (popnn's GruDef.hpp) and how they are named.
//
// A cell order is a permutation of the three gates: cellOrder[i] is the gate whose weights,
// biases and weight gradients sit in slot i of dimension 0. Names (asString and
// parseBasicGruCellUnit, and gru_layer's --cell-order flag): reset, update, cell (the candidate).
// The gates' formulas: docs/recurrent.md, "GRU and AUGRU".
#pragma once

#include <aspen/Export.hpp>

#include <string>

// At global scope, as PopLibs declares it (programs name the gates unqualified), and without
// stream operators, which programs define for themselves.
enum BasicGruCellUnit {
  BASIC_GRU_CELL_RESET_GATE = 0,
  BASIC_GRU_CELL_UPDATE_GATE = 1,
  BASIC_GRU_CELL_CANDIDATE = 2,
  BASIC_GRU_CELL_NUM_UNITS = 3
};

namespace aspen::nn::gru {

using ::BasicGruCellUnit;
using ::BASIC_GRU_CELL_RESET_GATE;
using ::BASIC_GRU_CELL_UPDATE_GATE;
using ::BASIC_GRU_CELL_CANDIDATE;
using ::BASIC_GRU_CELL_NUM_UNITS;

// "reset", "update", "cell"; raises invalid_option for another value.
ASPEN_API std::string asString(BasicGruCellUnit unit);
// Reads one of those names; raises invalid_option naming the allowed names otherwise.
ASPEN_API BasicGruCellUnit parseBasicGruCellUnit(const std::string &name);

} // namespace aspen::nn::gru
