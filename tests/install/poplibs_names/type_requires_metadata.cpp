// poplar::Type::requiresMetadata: true only for QUARTER, whose values mean something only with
// their QUARTER_METADATA (format and scale); PopLibs' tools create the metadata tensor when it
// is true.
#include <poplar/Type.hpp>

#include <cstdlib>
#include <iostream>

int main() {
  static_assert(poplar::QUARTER.requiresMetadata(), "QUARTER needs its metadata");
  bool ok = poplar::QUARTER.requiresMetadata();
  for (poplar::Type t : {poplar::FLOAT, poplar::HALF, poplar::INT, poplar::UNSIGNED_INT,
                         poplar::BOOL, poplar::CHAR, poplar::QUARTER_METADATA})
    ok = ok && !t.requiresMetadata();
  ok = ok && !poplar::Type().requiresMetadata(); // the invalid type
  std::cout << (ok ? "type_requires_metadata ok" : "type_requires_metadata FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
