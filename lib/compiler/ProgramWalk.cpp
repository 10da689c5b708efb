#include "ProgramWalk.hpp"

#include <unordered_set>

namespace aspen::detail {

namespace {
struct Walker {
  const GraphState &graph;
  const std::function<void(const ProgramNode &)> &visit;
  std::unordered_set<const ProgramNode *> seen;

  void walk(const ProgramNode &node) {
    if (!seen.insert(&node).second)
      return;
    visit(node);
    for (const program::Program &child : node.children)
      if (!child.isEmpty())
        walk(child.node());
    // A Call of another graph's function is reported by verification, not followed.
    if (node.kind == ProgramKind::Call && node.graph == &graph && node.id < graph.functions.size())
      walk(graph.functions[node.id].node());
  }
};
} // namespace

void forEachProgramNode(const GraphState &graph, ArrayRef<program::Program> programs,
                        const std::function<void(const ProgramNode &)> &visit) {
  Walker walker{graph, visit, {}};
  for (const program::Program &p : programs)
    if (!p.isEmpty())
      walker.walk(p.node());
}

} // namespace aspen::detail
