#include <aspen/Type.hpp>

namespace aspen {

namespace {
struct TypeTraitsRow {
  const char *name;
  std::size_t size;
  bool isFloat;
  bool isSigned;
};

constexpr TypeTraitsRow kTypeTable[] = {
#define ASPEN_TYPE_ROW(e, c, n, h, s, f, sg) {n, s, f, sg},
    ASPEN_FOR_EACH_TYPE(ASPEN_TYPE_ROW)
#undef ASPEN_TYPE_ROW
};
static_assert(sizeof(kTypeTable) / sizeof(kTypeTable[0]) == kNumTypes);

#define ASPEN_TYPE_SIZE_CHECK(e, c, n, h, s, f, sg) static_assert(sizeof(h) == s, n);
ASPEN_FOR_EACH_TYPE(ASPEN_TYPE_SIZE_CHECK)
#undef ASPEN_TYPE_SIZE_CHECK

const TypeTraitsRow *row(TypeId id) {
  const auto i = static_cast<unsigned>(id);
  return i < kNumTypes ? &kTypeTable[i] : nullptr;
}
} // namespace

std::size_t Type::size() const noexcept {
  const auto *r = row(id_);
  return r ? r->size : 0;
}

bool Type::isFloatingPoint() const noexcept {
  const auto *r = row(id_);
  return r && r->isFloat;
}

bool Type::isSigned() const noexcept {
  const auto *r = row(id_);
  return r && r->isSigned;
}

std::string Type::toString() const {
  const auto *r = row(id_);
  return r ? r->name : "invalid type";
}

} // namespace aspen
