// Writes the seed corpus of the deserialize harness (fuzz/corpus/deserialize), made anew whenever
// the executable format changes (kExecutableFormatVersion, lib/compiler/CompiledGraph.hpp; the
// harness frames inputs with it, and the unit test "the deserialize fuzzer's seeds are of the
// executable format" fails when the seeds are of another). Three executables without codelet
// libraries (the seeds carry none), each as given ("-raw": first byte odd) and as a body for the
// harness to frame ("-framed": first byte even), and two regressions made from them:
//  - regression-region-overflow: a reversed copy's stride set so that its last element's offset
//    overflows 64-bit arithmetic (validate() once computed region ends in wrapping arithmetic);
//  - regression-trailing-bytes: bytes after the executable, before the checksum (once ignored).
// Build and run against a build tree, from the source root:
//   g++ -std=c++17 -Iinclude fuzz/make_deserialize_seeds.cpp -Lbuild/lib -laspen \
//       -Wl,-rpath,$PWD/build/lib -o /tmp/make_seeds && /tmp/make_seeds fuzz/corpus/deserialize
#include <aspen/Collectives.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Kernels.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

using namespace aspen;
using namespace aspen::program;

namespace {

// Header: magic (8 bytes) and version (4); then the body; then the checksum (8).
constexpr std::size_t kHeader = 12, kChecksum = 8;

Tensor mapped(Graph &g, Tensor t, unsigned tile) {
  g.setTileMapping(t, tile);
  return t;
}

// Copies (plain, through a reversed view, overlapping through a temporary), stream copies and
// a Gemm whose transposed operand is gathered into its scratch (rearranging Copy steps).
std::string copiesExecutable() {
  Graph g(Target::createGeneric(2));
  Tensor a = mapped(g, g.addVariable(FLOAT, {4, 3}, "a"), 0);
  Tensor b = mapped(g, g.addVariable(FLOAT, {4, 3}, "b"), 1);
  Tensor c = mapped(g, g.addVariable(FLOAT, {3, 3}, "c"), 1);
  Tensor v = mapped(g, g.addVariable(FLOAT, {8}, "v"), 0);
  g.createHostWrite("a", a);
  g.createHostRead("c", c);
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, 8);
  DataStream out = g.addDeviceToHostFIFO("out", FLOAT, 8);
  Sequence prog({Copy(in, v), Copy(a, b), Copy(a.flatten().reverse(0), b.flatten()),
                 Copy(v.slice(0, 6), v.slice(2, 8)), Gemm(a.transpose(), b, c), Copy(v, out)});
  std::ostringstream s;
  compileGraph(g, {prog}).serialize(s);
  return s.str();
}

// Every kind of control flow, a function called twice, a print and an abort.
std::string controlExecutable() {
  Graph g(Target::createGeneric(2));
  Tensor x = mapped(g, g.addVariable(FLOAT, {4}, "x"), 0);
  Tensor y = mapped(g, g.addVariable(FLOAT, {4}, "y"), 1);
  Tensor p = mapped(g, g.addVariable(BOOL, {}, "p"), 0);
  Tensor n = mapped(g, g.addVariable(INT, {}, "n"), 0);
  g.createHostWrite("x", x);
  g.createHostWrite("p", p);
  g.createHostWrite("n", n);
  g.createHostRead("y", y);
  Function f = g.addFunction(Sequence({Copy(x, y)}));
  Sequence prog({Call(f), If(p, Copy(y, x), Sequence()), Repeat(3, Copy(x, y)),
                 RepeatWhileFalse(Sequence(), p, Copy(y, x)),
                 Switch(n, {{1, Copy(x, y)}, {2, Call(f)}}, Sequence()), PrintTensor("y", y),
                 WriteUndef(x), AbortOnCondition(p), Sync(SyncType::INTERNAL)});
  std::ostringstream s;
  compileGraph(g, {prog}).serialize(s);
  return s.str();
}

// A replicated graph: collectives of every kind, over groups, a cross-replica copy and a
// replicated stream (the collectives' shapes, groups and copy map).
std::string collectivesExecutable() {
  Graph g(Target::createGeneric(2), replication_factor(4));
  using collectives::CollectiveOperator;
  using collectives::CommGroup;
  using collectives::CommGroupType;
  Tensor x = mapped(g, g.addVariable(FLOAT, {8}, "x"), 0);
  Tensor h = mapped(g, g.addVariable(HALF, {6}, "h"), 1);
  Tensor k = mapped(g, g.addVariable(INT, {4, 2}, "k"), 1);
  Tensor d = mapped(g, g.addVariable(FLOAT, {8}, "d"), 1);
  g.createHostWrite("x", x);
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, 8);
  Sequence prog({Copy(in, x)});
  collectives::allReduceInPlaceCrossReplica(g, x, CollectiveOperator::MEAN, prog);
  mapped(g, collectives::allReduceCrossReplica(g, h, CollectiveOperator::MAX, prog,
                                                CommGroup(CommGroupType::CONSECUTIVE, 2)),
         1);
  mapped(g, collectives::reduceScatterCrossReplica(g, x, CollectiveOperator::ADD, prog,
                                                    CommGroup(CommGroupType::ORTHOGONAL, 2)),
         0);
  mapped(g, collectives::allGatherCrossReplica(g, h, prog), 0);
  mapped(g, collectives::broadcastCrossReplica(g, x, prog, 3), 1);
  mapped(g, collectives::allToAllCrossReplica(g, k, prog), 0);
  prog.add(CrossReplicaCopy(x, d, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
  std::ostringstream s;
  compileGraph(g, {prog}).serialize(s);
  return s.str();
}

void write(const std::string &folder, const std::string &name, char first,
           const std::string &bytes) {
  std::ofstream file(folder + "/" + name, std::ios::binary);
  file.put(first);
  file.write(bytes.data(), std::streamsize(bytes.size()));
  if (!file)
    throw std::runtime_error("cannot write " + folder + "/" + name);
}

std::string body(const std::string &stream) {
  return stream.substr(kHeader, stream.size() - kHeader - kChecksum);
}

// The body with the first reversed run's stride (-4 bytes, a float) replaced by `stride`.
std::string withStride(std::string body, std::int64_t stride) {
  const std::int64_t reversed = -4;
  char pattern[8], replacement[8];
  std::memcpy(pattern, &reversed, 8);
  std::memcpy(replacement, &stride, 8);
  const std::size_t at = body.find(std::string(pattern, 8));
  if (at == std::string::npos)
    throw std::runtime_error("the copies executable has no reversed run");
  body.replace(at, 8, replacement, 8);
  return body;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FOLDER (fuzz/corpus/deserialize)\n", argv[0]);
    return 2;
  }
  const std::string folder = argv[1];
  const std::string copies = copiesExecutable(), control = controlExecutable(),
                    replicated = collectivesExecutable();
  write(folder, "copies-raw", 1, copies);
  write(folder, "copies-framed", 0, body(copies));
  write(folder, "control-raw", 1, control);
  write(folder, "control-framed", 0, body(control));
  write(folder, "collectives-raw", 1, replicated);
  write(folder, "collectives-framed", 0, body(replicated));
  write(folder, "regression-region-overflow", 0,
        withStride(body(copies), INT64_MIN / 2 + 1));
  write(folder, "regression-trailing-bytes", 0, body(control) + std::string(16, '\x5a'));
  std::printf("wrote 8 seeds to %s\n", folder.c_str());
  return 0;
}
