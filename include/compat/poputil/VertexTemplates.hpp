// PopLibs' <poputil/VertexTemplates.hpp>, mapped onto <aspen/util/VertexTemplates.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poputil/Namespace.hpp>
#include <aspen/util/VertexTemplates.hpp>
