// convertToDeviceType / convertFromDeviceType (aspen/TypeConversion.hpp): the rules of
// support/TypeConversion for every type but QUARTER, which goes through its metadata.
#include "support/TypeConversion.hpp"

#include <aspen/Error.hpp>
#include <aspen/TypeConversion.hpp>

#include <fmt/format.h>

#include <cstring>
#include <vector>

namespace aspen {

using detail::convertValues;
using detail::HostType;
using detail::loadAsDouble;

namespace {

double hostValue(HostType t, const std::uint8_t *p) {
  if (t.isDouble) {
    double d;
    std::memcpy(&d, p, sizeof d);
    return d;
  }
  return loadAsDouble(t.type, p);
}

void requireMetadataMatches(Type type, const QuarterMetadata *metadata, const char *what) {
  if (!type.valid())
    throw type_error(fmt::format("{}: the device type is invalid", what));
  if (type == QUARTER && !metadata)
    throw type_error(fmt::format("{}: QUARTER values need a QuarterMetadata (the overload taking "
                                 "one) for their format and scale",
                                 what));
  if (type != QUARTER && metadata)
    throw type_error(
        fmt::format("{}: a QuarterMetadata is only for QUARTER, not {}", what, type.toString()));
}

} // namespace

void convertToDeviceTypeFromHost(Type dstType, const QuarterMetadata *metadata, HostType hostType,
                                 const void *src, std::size_t count, void *dst) {
  const char *what = "convertToDeviceType";
  requireMetadataMatches(dstType, metadata, what);
  if (count > 0 && (!src || !dst))
    throw type_error(fmt::format("{}: a buffer pointer is null", what));
  const auto *in = static_cast<const std::uint8_t *>(src);
  std::vector<std::uint8_t> out(count * dstType.size());
  if (dstType == QUARTER && !(hostType.type == QUARTER && !hostType.isDouble)) {
    for (std::size_t i = 0; i < count; ++i)
      out[i] = detail::floatToQuarter(
          static_cast<float>(hostValue(hostType, in + i * hostType.size())), *metadata);
  } else {
    convertValues(hostType, src, dstType, out.data(), count, what);
  }
  if (!out.empty())
    std::memcpy(dst, out.data(), out.size());
}

void convertFromDeviceTypeToHost(Type srcType, const QuarterMetadata *metadata, const void *src,
                                 HostType hostType, void *dst, std::size_t count) {
  const char *what = "convertFromDeviceType";
  requireMetadataMatches(srcType, metadata, what);
  if (!hostType.valid())
    throw type_error(fmt::format("{}: the host type is not an Aspen element type", what));
  if (count > 0 && (!src || !dst))
    throw type_error(fmt::format("{}: a buffer pointer is null", what));
  const auto *in = static_cast<const std::uint8_t *>(src);
  std::vector<std::uint8_t> out(count * hostType.size());
  if (srcType == QUARTER && hostType.type == QUARTER && !hostType.isDouble) {
    std::memcpy(out.data(), in, count); // codes as they are
  } else if (srcType == QUARTER) {
    // Decoded exactly into float, then converted as float data is (one call, not one a value).
    std::vector<float> decoded(count);
    for (std::size_t i = 0; i < count; ++i)
      decoded[i] = detail::quarterToFloat(in[i], *metadata);
    if (hostType.isDouble)
      for (std::size_t i = 0; i < count; ++i) {
        const double d = decoded[i];
        std::memcpy(out.data() + i * sizeof d, &d, sizeof d);
      }
    else
      convertValues(HostType(FLOAT), decoded.data(), hostType.type, out.data(), count, what);
  } else if (hostType.isDouble) {
    for (std::size_t i = 0; i < count; ++i) {
      const double d = loadAsDouble(srcType, in + i * srcType.size());
      std::memcpy(out.data() + i * sizeof d, &d, sizeof d);
    }
  } else {
    convertValues(HostType(srcType), in, hostType.type, out.data(), count, what);
  }
  if (!out.empty())
    std::memcpy(dst, out.data(), out.size());
}

} // namespace aspen
