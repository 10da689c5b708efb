// Poplar's <poplar/GraphElements.hpp>, mapped onto <aspen/GraphElements.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/GraphElements.hpp>
