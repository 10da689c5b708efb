// poplin::addCodelets(graph): aspen::linalg::addCodelets.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplin/Namespace.hpp>
#include <aspen/linalg/Codelets.hpp>
