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
#include <iterator>
#include <ostream>
#include <string>

namespace popnn {

namespace compat_detail {
// Each kind with PopLibs' printed name and the token operator>> reads: one table for both.
struct NonLinearityName {
  NonLinearityType type;
  const char *printed;
  const char *token;
};
inline constexpr NonLinearityName kNonLinearityNames[] = {
    {NonLinearityType::SIGMOID, "sigmoid", "sigmoid"},
    {NonLinearityType::HARD_SIGMOID, "hard_sigmoid", "hard_sigmoid"},
    {NonLinearityType::RELU, "relu", "relu"},
    {NonLinearityType::TANH, "tanh", "tanh"},
    {NonLinearityType::GELU, "gelu", "gelu"},
    {NonLinearityType::GELU_ERF, "gelu_erf", "gelu_erf"},
    {NonLinearityType::SWISH, "swish", "swish"},
    {NonLinearityType::SOFTMAX, "softmax", "softmax"},
    {NonLinearityType::SOFTMAX_STABLE, "softmax (stable)", "softmax_stable"},
    {NonLinearityType::SOFTMAX_SCALED, "softmax (scaled, stable)", "softmax_scaled"}};
static_assert(std::size(kNonLinearityNames) == aspen::nn::kNumNonLinearityTypes,
              "every NonLinearityType needs a PopLibs name");
} // namespace compat_detail

inline const char *asString(const popnn::NonLinearityType &type) {
  for (const auto &n : compat_detail::kNonLinearityNames)
    if (n.type == type)
      return n.printed;
  throw poputil::poplibs_error("Unsupported non-linearity type " +
                               std::to_string(static_cast<int>(type)));
}

inline std::ostream &operator<<(std::ostream &os, const popnn::NonLinearityType &type) {
  return os << asString(type);
}

inline std::istream &operator>>(std::istream &in, popnn::NonLinearityType &type) {
  std::string token;
  in >> token;
  for (const auto &n : compat_detail::kNonLinearityNames)
    if (token == n.token) {
      type = n.type;
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
