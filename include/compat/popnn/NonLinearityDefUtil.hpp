// PopLibs' <popnn/NonLinearityDefUtil.hpp>: asString and the stream operators for
// NonLinearityType in namespace popnn, with PopLibs' names ("relu", "softmax (stable)", ...;
// operator>> reads "relu", "softmax_stable", ...), and the NonLinearityType spelling for
// templateVertex. Aspen's kinds that PopLibs' header does not name (HARD_SIGMOID, GELU_ERF,
// SWISH) are named and read as hard_sigmoid, gelu_erf and swish. An unknown name throws
// poputil::poplibs_error, as PopLibs does.
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/NonLinearityDef.hpp>
#include <poputil/VertexTemplates.hpp>
#include <poputil/exceptions.hpp>

#include <istream>
#include <ostream>
#include <string>

namespace popnn {

inline const char *asString(const popnn::NonLinearityType &type) {
  switch (type) {
  case NonLinearityType::SIGMOID:
    return "sigmoid";
  case NonLinearityType::HARD_SIGMOID:
    return "hard_sigmoid";
  case NonLinearityType::RELU:
    return "relu";
  case NonLinearityType::TANH:
    return "tanh";
  case NonLinearityType::GELU:
    return "gelu";
  case NonLinearityType::GELU_ERF:
    return "gelu_erf";
  case NonLinearityType::SWISH:
    return "swish";
  case NonLinearityType::SOFTMAX:
    return "softmax";
  case NonLinearityType::SOFTMAX_STABLE:
    return "softmax (stable)";
  case NonLinearityType::SOFTMAX_SCALED:
    return "softmax (scaled, stable)";
  }
  throw poputil::poplibs_error("Unsupported non-linearity type " +
                               std::to_string(static_cast<int>(type)));
}

inline std::ostream &operator<<(std::ostream &os, const popnn::NonLinearityType &type) {
  return os << asString(type);
}

inline std::istream &operator>>(std::istream &in, popnn::NonLinearityType &type) {
  std::string token;
  in >> token;
  static const struct {
    const char *token;
    NonLinearityType type;
  } kTokens[] = {{"relu", NonLinearityType::RELU},
                 {"sigmoid", NonLinearityType::SIGMOID},
                 {"hard_sigmoid", NonLinearityType::HARD_SIGMOID},
                 {"tanh", NonLinearityType::TANH},
                 {"gelu", NonLinearityType::GELU},
                 {"gelu_erf", NonLinearityType::GELU_ERF},
                 {"swish", NonLinearityType::SWISH},
                 {"softmax", NonLinearityType::SOFTMAX},
                 {"softmax_stable", NonLinearityType::SOFTMAX_STABLE},
                 {"softmax_scaled", NonLinearityType::SOFTMAX_SCALED}};
  for (const auto &t : kTokens)
    if (token == t.token) {
      type = t.type;
      return in;
    }
  throw poputil::poplibs_error("Unsupported non-linearity type '" + token + "'");
}

} // namespace popnn

namespace poputil {

// "popnn::NonLinearityType::SIGMOID", ...: the element-wise kinds (the softmax family is not a
// vertex template argument in PopLibs, and throws here as there).
template <> struct VertexTemplateToString<popnn::NonLinearityType> {
  static std::string to_string(const popnn::NonLinearityType &type) {
    if (aspen::nn::isSoftmax(type))
      throw poputil::poplibs_error("Unsupported non-linearity type");
    return "popnn::NonLinearityType::" + aspen::nn::nonLinearityName(type);
  }
};

} // namespace poputil
