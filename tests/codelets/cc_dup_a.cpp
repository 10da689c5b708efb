// Defines cc::Duplicate; cc_dup_b.cpp defines it as well (duplicate-name test).
#include <aspen/Vertex.hpp>

namespace cc {
class Duplicate : public aspen::Vertex {
public:
  aspen::Output<int> out;
  void compute() { *out = 1; }
};
} // namespace cc
