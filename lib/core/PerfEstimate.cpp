#include "GraphState.hpp"
#include "support/TypeConversion.hpp"

#include <aspen/PerfEstimate.hpp>

#include <fmt/format.h>

namespace aspen {

using detail::FieldShape;

FieldData::FieldData(const detail::FieldInfo &info, const detail::FieldBinding &binding, std::size_t edge)
    : info_(&info), binding_(&binding), edge_(edge) {}

std::size_t FieldData::size() const {
  if (edge_ != kWhole) {
    const Tensor &t = binding_->edges[edge_];
    return t.valid() ? t.numElements() : 0;
  }
  if (!info_->isEdge())
    return info_->shape == FieldShape::Vector ? binding_->valueCount : 1;
  if (info_->shape == FieldShape::VectorOfVectors)
    return binding_->edges.size();
  return binding_->tensor.valid() ? binding_->tensor.numElements() : 0;
}

FieldData FieldData::operator[](std::size_t i) const {
  if (info_->shape != FieldShape::VectorOfVectors || !info_->isEdge() || edge_ != kWhole)
    throw index_error(fmt::format("FieldData of field '{}': only a vector-of-vectors field has edges to index",
                                  info_->name));
  if (i >= binding_->edges.size())
    throw index_error(fmt::format("FieldData of field '{}': edge {} is outside its {} edges", info_->name, i,
                                  binding_->edges.size()));
  return FieldData(*info_, *binding_, i);
}

double FieldData::initialValueAsDouble() const {
  if (info_->isEdge() || info_->shape != FieldShape::Scalar || !binding_->hasValue)
    throw graph_connection_error(fmt::format(
        "FieldData of field '{}': getInitialValue needs a plain scalar member that has been set", info_->name));
  if (!info_->elementType.valid())
    throw type_error(fmt::format("FieldData of field '{}': the member is not of an Aspen element type",
                                 info_->name));
  return detail::loadAsDouble(info_->elementType, binding_->value.data());
}

FieldData VertexIntrospector::getFieldInfo(StringRef name) const {
  const int index = vertex_->type->fieldIndex(name);
  if (index < 0)
    throw unknown_field(fmt::format("VertexIntrospector: vertex type '{}' has no field '{}'",
                                    vertex_->type->name, name));
  return FieldData(vertex_->type->fields[index], vertex_->fields[index], ~std::size_t(0));
}

} // namespace aspen
