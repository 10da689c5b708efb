// A codelet with a type error on line 9 (compile-error test): the message must point there.
#include <aspen/Vertex.hpp>

class Broken : public aspen::Vertex {
public:
  aspen::Output<float> out;

  void compute() {
    *out = undeclaredName + 1.0f; // line 9
  }
};
