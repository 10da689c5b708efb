// Host compilation of codelet files: entry points called directly with FieldDescs for every
// field kind, compiled metadata, template instances, MultiVertex workers, the on-disk cache,
// aspen-cc output and serialised binaries.
#include "TestPaths.hpp"

#include <catch2/catch.hpp>

#include "codelets/CodeletCache.hpp"
#include "codelets/CodeletLibrary.hpp"
#include "codelets/HostCompiler.hpp"

#include <aspen/Error.hpp>
#include <aspen/HalfFloat.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

using namespace aspen;
using namespace aspen::detail;

namespace {

const std::string kFieldsFile = aspen::test::codelet("cc_fields.cpp");

std::shared_ptr<const CodeletLibrary> fieldsLibrary() {
  static const auto lib = CodeletLibrary::compileFile(kFieldsFile);
  return lib;
}

const VertexTypeInfo &vertexType(const CodeletLibrary &lib, const std::string &name) {
  for (const VertexTypeInfo &t : lib.vertexTypes())
    if (t.name == name)
      return t;
  FAIL("no vertex type " << name << " in " << lib.sourceName());
  throw;
}

template <class T> FieldDesc desc(std::vector<T> &values) { return {values.data(), values.size()}; }
template <class T> FieldDesc desc(T &value) { return {&value, 1}; }

struct ExpectedField {
  const char *name;
  FieldDirection direction;
  FieldShape shape;
  Type type;
  unsigned bytes;
};

void checkFields(const VertexTypeInfo &type, const std::vector<ExpectedField> &expected) {
  INFO("vertex " << type.name);
  REQUIRE(type.fields.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("field " << expected[i].name);
    CHECK(type.fields[i].name == expected[i].name);
    CHECK(type.fields[i].direction == expected[i].direction);
    CHECK(type.fields[i].shape == expected[i].shape);
    CHECK(type.fields[i].elementType == expected[i].type);
    CHECK(type.fields[i].elementBytes == expected[i].bytes);
    CHECK(type.fieldIndex(expected[i].name) == static_cast<int>(i));
  }
}

// A fresh, empty cache directory for the duration of a test.
class ScopedCacheDir {
public:
  ScopedCacheDir() {
    const char *old = std::getenv("ASPEN_CACHE_DIR");
    old_ = old ? old : "";
    hadOld_ = old != nullptr;
    dir_ = std::filesystem::temp_directory_path() /
           ("aspen-cc-test-" + std::to_string(::getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    setenv("ASPEN_CACHE_DIR", dir_.c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (hadOld_)
      setenv("ASPEN_CACHE_DIR", old_.c_str(), 1);
    else
      unsetenv("ASPEN_CACHE_DIR");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::filesystem::path &path() const { return dir_; }

private:
  std::filesystem::path dir_;
  std::string old_;
  bool hadOld_ = false;
};

} // namespace

TEST_CASE("compiled metadata matches the declared fields", "[codelets]") {
  const auto lib = fieldsLibrary();
  CHECK(lib->sourceName() == kFieldsFile);
  CHECK(lib->vertexTypes().size() == 10);
  using D = FieldDirection;
  using S = FieldShape;
  checkFields(vertexType(*lib, "cc::ScalarEdges"), {{"a", D::Input, S::Scalar, FLOAT, 4},
                                                    {"sum", D::Output, S::Scalar, FLOAT, 4},
                                                    {"counter", D::InOut, S::Scalar, INT, 4}});
  checkFields(vertexType(*lib, "cc::VectorEdges"),
              {{"in", D::Input, S::Vector, FLOAT, 4},
               {"out", D::Output, S::Vector, FLOAT, 4},
               {"acc", D::InOut, S::Vector, SHORT, 2},
               {"size", D::Plain, S::Scalar, UNSIGNED_SHORT, 2},
               {"scale", D::Plain, S::Scalar, FLOAT, 4},
               {"offsets", D::Plain, S::Vector, UNSIGNED_INT, 4},
               {"inSize", D::Output, S::Scalar, UNSIGNED_INT, 4}});
  checkFields(vertexType(*lib, "cc::TwoDimensional"),
              {{"rows", D::Input, S::VectorOfVectors, FLOAT, 4},
               {"lists", D::Input, S::VectorOfVectors, INT, 4},
               {"outs", D::Output, S::VectorOfVectors, FLOAT, 4},
               {"rowSums", D::Output, S::Vector, FLOAT, 4},
               {"listTotals", D::Output, S::Vector, INT, 4}});
  checkFields(vertexType(*lib, "cc::DoubleLists"),
              {{"lists", D::InOut, S::VectorOfVectors, FLOAT, 4}});
  checkFields(vertexType(*lib, "cc::HalfSum<float>"),
              {{"in", D::Input, S::Vector, FLOAT, 4}, {"out", D::Output, S::Scalar, FLOAT, 4}});
  checkFields(vertexType(*lib, "cc::HalfSum<int>"),
              {{"in", D::Input, S::Vector, INT, 4}, {"out", D::Output, S::Scalar, INT, 4}});
  checkFields(vertexType(*lib, "cc::HalfOp"), {{"in", D::Input, S::Scalar, HALF, 2},
                                               {"out", D::Output, S::Scalar, HALF, 2},
                                               {"mode", D::Plain, S::Scalar, UNSIGNED_CHAR, 1},
                                               {"big", D::Plain, S::Scalar, LONGLONG, 8}});
  CHECK(vertexType(*lib, "cc::Squares").isMultiVertex);
  CHECK_FALSE(vertexType(*lib, "cc::ScalarEdges").isMultiVertex);
  for (const VertexTypeInfo &t : lib->vertexTypes()) {
    CHECK(t.library == lib.get());
    CHECK(t.entry != nullptr);
  }
  CHECK(vertexType(*lib, "cc::AddOne").fieldIndex("nope") == -1);
}

TEST_CASE("scalar edges read, write and update", "[codelets]") {
  const auto lib = fieldsLibrary();
  float a = 1.25f, sum = -1.0f;
  int counter = 10;
  const FieldDesc fields[] = {desc(a), desc(sum), desc(counter)};
  CHECK(vertexType(*lib, "cc::ScalarEdges").entry(fields, 0, 1) == 1);
  CHECK(sum == 2.5f);
  CHECK(counter == 13);
  CHECK(a == 1.25f);
}

TEST_CASE("vector edges and plain members, const and vector ones included", "[codelets]") {
  const auto lib = fieldsLibrary();
  std::vector<float> in{1, 2, 3, 4}, out(4, -7.0f);
  std::vector<short> acc{5, -5, 0};
  unsigned short size = 3; // the vertex writes only the first `size` outputs
  float scale = 0.5f;
  std::vector<unsigned> offsets{10, 20, 30};
  unsigned inSize = 0;
  const FieldDesc fields[] = {desc(in),    desc(out),     desc(acc),   desc(size),
                              desc(scale), desc(offsets), desc(inSize)};
  CHECK(vertexType(*lib, "cc::VectorEdges").entry(fields, 0, 1) == 1);
  CHECK(out == std::vector<float>{10.5f, 21.0f, 31.5f, -7.0f});
  CHECK(acc == std::vector<short>{6, -4, 1});
  CHECK(inSize == 4);
}

TEST_CASE("2-D edges: Vector<Input<Vector>>, VectorList and Vector<Output<Vector>>", "[codelets]") {
  const auto lib = fieldsLibrary();
  std::vector<float> r0{1, 2}, r1{}, r2{3, 4, 5};
  std::vector<FieldDesc> rows{desc(r0), desc(r1), desc(r2)};
  std::vector<int> l0{7}, l1{1, 2, 3};
  std::vector<FieldDesc> lists{desc(l0), desc(l1)};
  std::vector<float> o0(2, 9.0f), o1(3, 9.0f);
  std::vector<FieldDesc> outs{desc(o0), desc(o1)};
  std::vector<float> rowSums(3, -1.0f);
  std::vector<int> listTotals(2, -1);
  const FieldDesc fields[] = {{rows.data(), rows.size()},
                              {lists.data(), lists.size()},
                              {outs.data(), outs.size()},
                              desc(rowSums),
                              desc(listTotals)};
  CHECK(vertexType(*lib, "cc::TwoDimensional").entry(fields, 0, 1) == 1);
  CHECK(rowSums == std::vector<float>{3, 0, 12});
  CHECK(listTotals == std::vector<int>{7, 6});
  CHECK(o0 == std::vector<float>{0, 0});
  CHECK(o1 == std::vector<float>{1, 1, 1});

  std::vector<float> d0{1.5f}, d1{-2, 4};
  std::vector<FieldDesc> doubled{desc(d0), desc(d1)};
  const FieldDesc listField[] = {{doubled.data(), doubled.size()}};
  CHECK(vertexType(*lib, "cc::DoubleLists").entry(listField, 0, 1) == 1);
  CHECK(d0 == std::vector<float>{3.0f});
  CHECK(d1 == std::vector<float>{-4, 8});
}

TEST_CASE("explicit template instances are distinct vertex types", "[codelets]") {
  const auto lib = fieldsLibrary();
  std::vector<float> fin{1.5f, 2.0f, 4.0f};
  float fout = 0;
  const FieldDesc ffields[] = {desc(fin), desc(fout)};
  CHECK(vertexType(*lib, "cc::HalfSum<float>").entry(ffields, 0, 1) == 1);
  CHECK(fout == 3.75f);

  std::vector<int> iin{1, 2, 4};
  int iout = 0;
  const FieldDesc ifields[] = {desc(iin), desc(iout)};
  CHECK(vertexType(*lib, "cc::HalfSum<int>").entry(ifields, 0, 1) == 1);
  CHECK(iout == 3); // 7 / 2 in integers
}

TEST_CASE("a MultiVertex covers its range over all workers and sees numWorkers()", "[codelets]") {
  const auto lib = fieldsLibrary();
  const VertexTypeInfo &squares = vertexType(*lib, "cc::Squares");
  for (unsigned numWorkers : {1u, 3u, 6u}) {
    INFO("workers " << numWorkers);
    std::vector<float> in(17), out(17, -1.0f);
    for (std::size_t i = 0; i < in.size(); ++i)
      in[i] = static_cast<float>(i) - 5.0f;
    std::vector<unsigned> seen(numWorkers, 0);
    const FieldDesc fields[] = {desc(in), desc(out), desc(seen)};
    for (unsigned w = 0; w < numWorkers; ++w)
      CHECK(squares.entry(fields, w, numWorkers) == 1);
    for (std::size_t i = 0; i < in.size(); ++i)
      CHECK(out[i] == in[i] * in[i]);
    CHECK(seen == std::vector<unsigned>(numWorkers, numWorkers));
  }
}

TEST_CASE("compute() returning false makes the entry return 0", "[codelets]") {
  const auto lib = fieldsLibrary();
  const VertexEntry entry = vertexType(*lib, "cc::PositiveCheck").entry;
  int x = 5;
  const FieldDesc fields[] = {desc(x)};
  CHECK(entry(fields, 0, 1) == 1);
  x = -5;
  CHECK(entry(fields, 0, 1) == 0);
}

TEST_CASE("one buffer connected as input and output works in place", "[codelets]") {
  const auto lib = fieldsLibrary();
  std::vector<float> data{1, -2, 3.5f};
  const FieldDesc fields[] = {desc(data), desc(data)};
  CHECK(vertexType(*lib, "cc::AddOne").entry(fields, 0, 1) == 1);
  CHECK(data == std::vector<float>{2, -1, 4.5f});
}

TEST_CASE("half edges and enum members", "[codelets]") {
  const auto lib = fieldsLibrary();
  half in(1.5f), out(0.0f);
  unsigned char mode = 1; // Mode::Multiply
  long long big = 0;
  const FieldDesc fields[] = {desc(in), desc(out), desc(mode), desc(big)};
  const VertexEntry entry = vertexType(*lib, "cc::HalfOp").entry;
  CHECK(entry(fields, 0, 1) == 1);
  CHECK(float(out) == 3.0f);
  mode = 0; // Mode::Add
  CHECK(entry(fields, 0, 1) == 1);
  CHECK(float(out) == 3.5f);
}

TEST_CASE("compiled libraries are cached on disk and shared in the process", "[codelets]") {
  ScopedCacheDir cache;
  const std::string source = "#include <aspen/Vertex.hpp>\n"
                             "struct CacheProbe : aspen::Vertex {\n"
                             "  aspen::Output<int> out;\n"
                             "  void compute() { *out = 41 + 1; }\n"
                             "};\n";
  const std::string path = (cache.path() / "probe.cpp").string();
  const unsigned long before = hostCompileCount();
  auto first = CodeletLibrary::compileSource(path, source);
  CHECK(hostCompileCount() == before + 1);
  const std::filesystem::path cached = cache.path() / (first->contentHash() + ".so");
  REQUIRE(std::filesystem::exists(cached));
  const auto writeTime = std::filesystem::last_write_time(cached);

  // While the first library lives, compiling again gives the same object.
  CHECK(CodeletLibrary::compileSource(path, source) == first);
  const std::string hash = first->contentHash();
  first.reset();

  // Afterwards the shared object comes from the disk cache, not from the compiler.
  auto second = CodeletLibrary::compileSource(path, source);
  CHECK(hostCompileCount() == before + 1);
  CHECK(second->contentHash() == hash);
  CHECK(std::filesystem::last_write_time(cached) == writeTime);
  int out = 0;
  const FieldDesc fields[] = {desc(out)};
  CHECK(second->vertexTypes().at(0).entry(fields, 0, 1) == 1);
  CHECK(out == 42);

  // A different source is a different cache entry.
  auto other = CodeletLibrary::compileSource(path, source + "static const int kOther = 1;\n");
  CHECK(hostCompileCount() == before + 2);
  CHECK(other->contentHash() != hash);
}

TEST_CASE("source text under a pseudo file name compiles and runs", "[codelets]") {
  const auto lib =
      CodeletLibrary::compileSource("<string>", "#include <aspen/Vertex.hpp>\n"
                                                "namespace s { struct Neg : aspen::Vertex {\n"
                                                "  aspen::InOut<int> x;\n"
                                                "  void compute() { *x = -*x; }\n"
                                                "}; }\n");
  REQUIRE(lib->vertexTypes().size() == 1);
  CHECK(lib->vertexTypes()[0].name == "s::Neg");
  CHECK(lib->sourceName() == "<string>");
  int x = 5;
  const FieldDesc fields[] = {desc(x)};
  CHECK(lib->vertexTypes()[0].entry(fields, 0, 1) == 1);
  CHECK(x == -5);
}

TEST_CASE("a file without vertex classes gives an empty library", "[codelets]") {
  const auto lib = CodeletLibrary::compileSource("empty.cpp", "static int helper() { return 1; }\n");
  CHECK(lib->vertexTypes().empty());
  CHECK(lib->sourceName() == "empty.cpp");
}

TEST_CASE("binary() bytes load back with loadBinary", "[codelets]") {
  const auto lib = fieldsLibrary();
  REQUIRE(!lib->binary().empty());
  const auto reloaded = CodeletLibrary::loadBinary(lib->binary());
  CHECK(reloaded->contentHash() == lib->contentHash());
  CHECK(reloaded->sourceName() == kFieldsFile);
  CHECK(reloaded->source() == readWholeFile(kFieldsFile));
  REQUIRE(reloaded->vertexTypes().size() == lib->vertexTypes().size());
  float a = 3.0f, sum = 0;
  int counter = 0;
  const FieldDesc fields[] = {desc(a), desc(sum), desc(counter)};
  const VertexTypeInfo &type = vertexType(*reloaded, "cc::ScalarEdges");
  CHECK(type.entry(fields, 0, 1) == 1);
  CHECK(sum == 6.0f);
  CHECK(type.library == reloaded.get());
}

#ifdef ASPEN_TEST_PRECOMPILED_CODELETS
TEST_CASE("aspen-cc output (aspen_add_codelets) loads with loadPrecompiled", "[codelets]") {
  const auto compiled = fieldsLibrary();
  const auto precompiled = CodeletLibrary::loadPrecompiled(aspen::test::precompiledCodelets());
  REQUIRE(precompiled->vertexTypes().size() == compiled->vertexTypes().size());
  for (std::size_t i = 0; i < compiled->vertexTypes().size(); ++i) {
    const VertexTypeInfo &a = compiled->vertexTypes()[i];
    const VertexTypeInfo &b = precompiled->vertexTypes()[i];
    CHECK(a.name == b.name);
    CHECK(a.isMultiVertex == b.isMultiVertex);
    REQUIRE(a.fields.size() == b.fields.size());
    for (std::size_t f = 0; f < a.fields.size(); ++f) {
      CHECK(a.fields[f].name == b.fields[f].name);
      CHECK(a.fields[f].direction == b.fields[f].direction);
      CHECK(a.fields[f].shape == b.fields[f].shape);
      CHECK(a.fields[f].elementType == b.fields[f].elementType);
    }
  }
  std::vector<float> data{1, 2};
  const FieldDesc fields[] = {desc(data), desc(data)};
  CHECK(vertexType(*precompiled, "cc::AddOne").entry(fields, 0, 1) == 1);
  CHECK(data == std::vector<float>{2, 3});
}
#endif
