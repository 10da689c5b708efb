// A Poplar host program exercising control flow and tensor views, built against include/compat
// with no source change: RepeatWhileTrue driven by a counter vertex, If, Switch (built from a
// case list and with add()), Call of a graph function, Repeat, AbortOnCondition caught as
// poplar_error, and PrintTensor of 2-D views. Its output is compared with
// ported_control.expected, worked out by hand.
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplar/Program.hpp>
#include <poplar/Tensor.hpp>
#include <poplar/exceptions.hpp>

using namespace poplar;
using namespace poplar::program;

enum Progs { LOOP, CHOOSE, SWITCH, CALL, VIEWS, CHECK, NUM_PROGRAMS };

static void printShape(const char *title, const Tensor &t) {
  std::cout << title << ": {";
  const auto shape = t.shape();
  for (unsigned i = 0; i < shape.size(); ++i)
    std::cout << (i ? "," : "") << shape[i];
  std::cout << "}\n";
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: ported_control codelets.cpp\n";
    return 1;
  }
  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 4;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  graph.addCodelets(argv[1]);

  std::vector<Program> progs(NUM_PROGRAMS);

  // --- LOOP: double `values` while count < 5, counted by a vertex. -------------------------
  Tensor count = graph.addVariable(UNSIGNED_INT, {}, "count");
  Tensor keepGoing = graph.addVariable(BOOL, {}, "keepGoing");
  Tensor values = graph.addVariable(FLOAT, {2, 2}, "values");
  Tensor limit = graph.addConstant(UNSIGNED_INT, {}, 5);
  Tensor countStart = graph.addConstant(UNSIGNED_INT, {}, 0);
  Tensor valuesStart = graph.addConstant<float>(FLOAT, {2, 2}, {1, 1.5, -2, 0.25});
  for (const Tensor &t : {count, keepGoing, values, limit, countStart, valuesStart})
    graph.setTileMapping(t, 0);

  ComputeSet condCs = graph.addComputeSet("cond");
  VertexRef cond = graph.addVertex(condCs, "LessThan",
                                   {{"count", count}, {"limit", limit}, {"result", keepGoing}});
  graph.setTileMapping(cond, 0);
  ComputeSet bodyCs = graph.addComputeSet("body");
  VertexRef body = graph.addVertex(bodyCs, "CountAndDouble");
  graph.connect(body["count"], count);
  graph.connect(body["values"], values.flatten());
  graph.setTileMapping(body, 0);

  progs[LOOP] = Sequence({Copy(countStart, count), Copy(valuesStart, values),
                          RepeatWhileTrue(Execute(condCs), keepGoing, Execute(bodyCs), "loop"),
                          PrintTensor("count", count), PrintTensor("values", values)});

  // --- CHOOSE: If on a host-written predicate. ---------------------------------------------
  Tensor predicate = graph.addVariable(INT, {}, "predicate");
  graph.setTileMapping(predicate, 1);
  graph.createHostWrite("predicate", predicate);
  progs[CHOOSE] = If(predicate, PrintTensor("then: values[0]", values[0]),
                     Sequence({PrintTensor("else: count", count)}), "choose");

  // --- SWITCH: a case list with a default, and cases added one by one. ---------------------
  Tensor control = graph.addVariable(INT, {}, "control");
  graph.setTileMapping(control, 1);
  graph.createHostWrite("control", control);
  Switch byList(control,
                {{0, PrintTensor("case 0: values[1]", values[1])},
                 {5, Sequence({PrintTensor("case 5: count", count)})}},
                PrintTensor("default: control", control), "byList");
  Switch byAdd(control, "byAdd");
  byAdd.add(1, PrintTensor("added 1: control", control))
      .add(5, PrintTensor("added 5: values[0][1]", values[0][1]));
  progs[SWITCH] = Sequence({byList, byAdd});

  // --- CALL: one function called twice, then repeated three times. --------------------------
  Tensor grid = graph.addVariable(INT, {2, 3}, "grid");
  graph.setTileMapping(grid.slice(0, 1), 2);
  graph.setTileMapping(grid.slice(1, 2), 3);
  ComputeSet addOneCs = graph.addComputeSet("addOne");
  for (unsigned row = 0; row < 2; ++row) {
    VertexRef v = graph.addVertex(addOneCs, "AddOne", {{"data", grid[row]}});
    graph.setTileMapping(v, 2 + row);
  }
  Function addOne = graph.addFunction(Execute(addOneCs));
  Tensor gridStart = graph.addConstant<int>(INT, {2, 3}, {0, 10, 20, 30, 40, 50});
  graph.setTileMapping(gridStart, 2);
  progs[CALL] = Sequence({Copy(gridStart, grid), Call(addOne), Call(addOne),
                          PrintTensor("grid after two calls", grid),
                          Repeat(3, Call(addOne)), PrintTensor("grid after five", grid)});

  // --- VIEWS: views as PrintTensor sources and Copy destinations. ---------------------------
  Tensor m = graph.addConstant<float>(FLOAT, {2, 3}, {0, 1, 2, 3, 4, 5});
  graph.setTileMapping(m, 0);
  Tensor c = graph.addConstant<float>(FLOAT, {6}, {10, 11, 12, 13, 14, 15});
  graph.setTileMapping(c, 0);
  Tensor work = graph.addVariable(FLOAT, {3, 2}, "work");
  graph.setTileMapping(work, 1);
  progs[VIEWS] = Sequence({
      PrintTensor("m", m),
      PrintTensor("m transposed", m.transpose()),
      PrintTensor("m[1]", m[1]),
      PrintTensor("m[1][2]", m[1][2]),
      PrintTensor("m corner", m.slice({0, 1}, {2, 3})),
      PrintTensor("m reversed", m.reverse(1)),
      PrintTensor("m subsampled", m.subSample(2, 1)),
      PrintTensor("m column 0 broadcast", m.slice(0, 1, 1).broadcast(3, 1)),
      PrintTensor("m rows joined", concat(m[0], m[1])),
      PrintTensor("m with row 0 appended", append(m, m[0], 0)),
      WriteUndef(work, "undef"),
      Copy(c, work.flatten()),
      Copy(m.transpose().slice(0, 2), work.slice({0, 0}, {2, 2})),
      PrintTensor("work", work),
  });

  // --- CHECK: abort when any value is above a host-written threshold. ----------------------
  Tensor threshold = graph.addVariable(FLOAT, {}, "threshold");
  Tensor tooBig = graph.addVariable(BOOL, {}, "tooBig");
  graph.setTileMapping(threshold, 0);
  graph.setTileMapping(tooBig, 0);
  graph.createHostWrite("threshold", threshold);
  ComputeSet checkCs = graph.addComputeSet("check");
  VertexRef check = graph.addVertex(
      checkCs, "AnyAbove", {{"in", values.flatten()}, {"threshold", threshold}, {"flag", tooBig}});
  graph.setTileMapping(check, 0);
  progs[CHECK] = Sequence({Execute(checkCs), AbortOnCondition(tooBig, "values too big"),
                           PrintTensor("check passed, threshold", threshold)});

  // Shapes of views, on the host.
  Tensor r = graph.addVariable(FLOAT, {2, 3, 4}, "r");
  graph.setTileMapping(r, 3);
  printShape("m.expand({0, 2})", m.expand({0, 2}));
  printShape("squeezed back", m.expand({0, 2}).squeeze({0, 3}));
  printShape("r.dimRoll(2, 0)", r.dimRoll(2, 0));
  printShape("r.dimShuffle({2, 0, 1})", r.dimShuffle({2, 0, 1}));
  printShape("r.dimShufflePartial({0}, {2})", r.dimShufflePartial({0}, {2}));
  printShape("r.reshapePartial(1, 3, {12})", r.reshapePartial(1, 3, {12}));
  printShape("r.flatten(1, 3)", r.flatten(1, 3));
  printShape("r.subSample(2, 2)", r.subSample(2, 2));
  printShape("r.slice(1, 3, 1)", r.slice(1, 3, 1));
  printShape("r.slice(Interval(1, 2))", r.slice(Interval(1, 2)));
  std::vector<Tensor> rows = m.slices({{0, 1}, {1, 2}});
  std::cout << "m.slices: " << rows.size() << " of " << rows[1].numElements() << " elements\n";
  std::cout << "r: rank " << r.rank() << ", dim(2) " << r.dim(2) << ", " << r.numElements()
            << " elements of " << r.elementType().toString() << "\n";
  std::cout << "contiguous: m " << m.isContiguous() << ", m transposed "
            << m.transpose().isContiguous() << "\n";
  std::cout << "aliases: m " << m.containsAliases() << ", broadcast "
            << m.slice(0, 1, 1).broadcast(3, 1).containsAliases() << "\n";
  std::cout << "constant: m " << m.containsConstant() << ", work " << work.containsConstant()
            << "; parallel writeable: work " << work.isParallelWriteable() << "\n";
  std::cout << "default Tensor valid: " << Tensor().valid() << std::endl;

  Engine engine(graph, progs);
  engine.load(device);

  engine.run(LOOP);
  for (int p : {1, 0}) {
    engine.writeTensor("predicate", &p, &p + 1);
    engine.run(CHOOSE);
  }
  for (int value : {0, 1, 5, 7}) {
    std::cout << "control = " << value << std::endl;
    engine.writeTensor("control", &value, &value + 1);
    engine.run(SWITCH);
  }
  engine.run(CALL);
  engine.run(VIEWS);
  float limitValue = 100;
  engine.writeTensor("threshold", &limitValue, &limitValue + 1);
  engine.run(CHECK);
  limitValue = 40;
  engine.writeTensor("threshold", &limitValue, &limitValue + 1);
  try {
    engine.run(CHECK);
    std::cout << "no abort\n";
  } catch (const poplar_error &e) {
    std::cout << "abort caught as poplar_error" << std::endl;
  }
  std::cout << "Program complete" << std::endl;
  return 0;
}
