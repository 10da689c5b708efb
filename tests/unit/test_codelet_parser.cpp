// Discovery of vertex classes and fields from codelet source (CodeletParser), and vertex name
// normalisation. Sources are preprocessed by the host compiler as addCodelets does.
#include <catch2/catch.hpp>

#include "codelets/CodeletLibrary.hpp"
#include "codelets/CodeletParser.hpp"
#include "codelets/HostCompiler.hpp"

#include <aspen/Error.hpp>

#include <string>
#include <vector>

using namespace aspen::detail;

namespace {

std::vector<ParsedVertex> parse(const std::string &source) {
  const HostCompiler &compiler = HostCompiler::get();
  return parseVertexClasses(compiler.preprocess("/virtual/user_codelets.cpp", source, {}),
                            {compiler.includeDir});
}

std::vector<std::string> names(const std::vector<ParsedVertex> &vertices) {
  std::vector<std::string> out;
  for (const ParsedVertex &v : vertices)
    out.push_back(v.name);
  return out;
}

std::vector<std::string> fieldNames(const ParsedVertex &v) {
  std::vector<std::string> out;
  for (const ParsedField &f : v.fields)
    out.push_back(f.name);
  return out;
}

const ParsedVertex &vertexNamed(const std::vector<ParsedVertex> &vertices,
                                const std::string &name) {
  for (const ParsedVertex &v : vertices)
    if (v.name == name)
      return v;
  FAIL("no vertex named " << name);
  throw;
}

using Names = std::vector<std::string>;

} // namespace

TEST_CASE("normalizeVertexName keeps spaces only between identifier characters", "[codelets]") {
  CHECK(normalizeVertexName("ns::V< float , true >") == "ns::V<float,true>");
  CHECK(normalizeVertexName("V<unsigned   int>") == "V<unsigned int>");
  CHECK(normalizeVertexName("  a :: b < unsigned long long , 3 > ") ==
        "a::b<unsigned long long,3>");
  CHECK(normalizeVertexName("V<A<int> >") == "V<A<int>>");
  CHECK(normalizeVertexName("::ns::V") == "ns::V");
  CHECK(normalizeVertexName("V<\tfloat\n>") == "V<float>");
  CHECK(normalizeVertexName("Plain") == "Plain");
}

TEST_CASE("normalizeVertexName spells each built-in integer type one way", "[codelets]") {
  // Different spellings of one C++ type name one vertex, in Aspen's Type names.
  CHECK(normalizeVertexName("V<unsigned>") == "V<unsigned int>");
  CHECK(normalizeVertexName("V<unsigned, signed>") == "V<unsigned int,int>");
  CHECK(normalizeVertexName("V<short int>") == "V<short>");
  CHECK(normalizeVertexName("V<unsigned short int>") == "V<unsigned short>");
  CHECK(normalizeVertexName("V<long long int,unsigned long long int>") ==
        "V<long long,unsigned long long>");
  CHECK(normalizeVertexName("V<signed char,char,unsigned char>") == "V<signed char,char,unsigned char>");
  CHECK(normalizeVertexName("V<long>") == "V<long>"); // a distinct C++ type from long long
  // Identifiers that merely contain a keyword are left alone.
  CHECK(normalizeVertexName("V<int8_t,longValue>") == "V<int8_t,longValue>");
  CHECK(normalizeVertexName("ns::V<float,3>") == "ns::V<float,3>");
}

TEST_CASE("parser finds vertex classes in nested namespaces, templates and several bases",
          "[codelets]") {
  const auto vertices = parse(R"src(
#include <aspen/Vertex.hpp>
using namespace aspen;
class Top : public Vertex { public: Input<float> in; };
namespace a { namespace b {
struct Inner : aspen::MultiVertex { Output<Vector<float>> out; void compute(unsigned) {} };
} }
namespace c::d {
class Deep final : public ::aspen::Vertex { public: float x; };
template <typename T, bool B> class Templ : public SupervisorVertex { public: InOut<T> io; };
template class Templ< float ,  true >;
}
template struct c::d::Templ<half, false>;
namespace c { template class d::Templ<int, true>; }
class NotAVertex { public: int y; };
struct AlsoNot : public NotAVertex { int z; };
)src");
  CHECK(names(vertices) == Names{"Top", "a::b::Inner", "c::d::Deep", "c::d::Templ<float,true>",
                                 "c::d::Templ<half,false>", "c::d::Templ<int,true>"});
  CHECK(vertexNamed(vertices, "a::b::Inner").qualifiedType == "::a::b::Inner");
  CHECK(fieldNames(vertexNamed(vertices, "c::d::Templ<half,false>")) == Names{"io"});
  CHECK(vertexNamed(vertices, "c::d::Templ<half,false>").qualifiedType ==
        "::c::d::Templ<half,false>");
}

TEST_CASE("parser reads fields and skips everything else in a class body", "[codelets]") {
  const auto vertices = parse(R"src(
#include <aspen/Vertex.hpp>
#define DECLARE_PAIR(name) Input<float> name##A; Input<float> name##B;
namespace poplar = aspen;
using namespace poplar;
static constexpr auto ONE_PTR = VectorLayout::ONE_PTR;
class [[poplar::constraint("elem(*in) != elem(*out)")]] Tricky : public poplar::Vertex {
  // comment with class X : public Vertex { int notAField; };
public:
  Tricky();
  ~Tricky() = default;
  Tricky(int v) : scale(1.0f), count{2} { if (v) { count = 3; } }
  static const bool isExternal = false;
  static constexpr unsigned kLimit = 4;
  using Element = float;
  typedef int Index;
  enum Kind { KA, KB };
  struct Helper { int h; };
  IS_EXTERNAL_CODELET(true);
  Input<Vector<float, ONE_PTR, 8>> in;
  alignas(8) Output<Vector<float>> out;
  [[maybe_unused]] InOut<unsigned> state;
  float scale = 1.0f, offset{0.5f};
  unsigned short a, *b, c[4];
  const unsigned short size;
  Vector<Input<Vector<half>>> rows;
  DECLARE_PAIR(p)
  int count;
  Kind kind;
  bool compute() {
    const char *text = "; } {";
    for (unsigned i = 0; i < size; ++i) { if (i > 2) { out[i] = in[i]; } }
    return text[0] == ';';
  }
  template <class U> U helper(U u) const { return u; }
  float inlineHelper() const { return scale > 0 ? scale : -scale; }
  bool operator==(const Tricky &) const = delete;
};
)src");
  REQUIRE(names(vertices) == Names{"Tricky"});
  const ParsedVertex &v = vertices[0];
  CHECK(fieldNames(v) == Names{"in", "out", "state", "scale", "offset", "a", "b", "c", "size",
                               "rows", "pA", "pB", "count", "kind"});
  CHECK(v.fields[0].typeSpelling == "Input<Vector<float,ONE_PTR,8>>");
  CHECK(v.fields[0].kind == SpelledFieldKind::Input);
  CHECK(v.fields[1].kind == SpelledFieldKind::Output);
  CHECK(v.fields[2].kind == SpelledFieldKind::InOut);
  CHECK(v.fields[3].kind == SpelledFieldKind::Plain);
  CHECK(v.fields[3].typeSpelling == "float");
  CHECK(v.fields[4].typeSpelling == "float");
  CHECK(v.fields[6].typeSpelling == "unsigned short");
  CHECK(v.fields[8].isConst);
  CHECK_FALSE(v.fields[7].isConst);
  CHECK(v.fields[9].kind == SpelledFieldKind::Vector);
  CHECK(v.file == "/virtual/user_codelets.cpp");
  CHECK(v.line == 7);
  CHECK(v.fields[0].line == 20);
}

TEST_CASE("parser ignores declarations from Aspen's and system headers", "[codelets]") {
  // Hand-written preprocessor output: a vertex-like class in a system header and one under the
  // ignored directory must not be found; the user's file keeps its own line numbers.
  const std::string preprocessed = "# 1 \"/work/user.cpp\"\n"
                                   "# 1 \"/usr/include/sys.h\" 1 3 4\n"
                                   "class SysV : public Vertex { int s; };\n"
                                   "# 3 \"/work/user.cpp\" 2\n"
                                   "# 1 \"/opt/aspen/include/aspen/Own.hpp\" 1\n"
                                   "class OwnV : public Vertex { int o; };\n"
                                   "# 4 \"/work/user.cpp\" 2\n"
                                   "\n"
                                   "struct UserV : Vertex { int u; };\n";
  const auto vertices = parseVertexClasses(preprocessed, {"/opt/aspen/include"});
  REQUIRE(names(vertices) == Names{"UserV"});
  CHECK(vertices[0].line == 5);
  CHECK(vertices[0].file == "/work/user.cpp");
}

TEST_CASE("parser handles several classes, function bodies and non-vertex templates",
          "[codelets]") {
  const auto vertices = parse(R"src(
#include <aspen/Vertex.hpp>
namespace ops {
template <typename T> T square(T x) { struct Local { int q; }; return x * x; }
struct Config { int a; } globalConfig;
template <typename T> struct Traits { static constexpr int value = 1; };
template struct Traits<float>;
class First : public aspen::Vertex { public: aspen::Input<int> x; void compute() { { ; } } };
enum class Colour { Red, Green };
class Second : public aspen::MultiVertex {
public:
  aspen::Output<aspen::Vector<int>> y;
  void compute(unsigned w) { auto f = [](int a) { return a; }; y[w] = f(1); }
};
template <typename T> class Third : public aspen::Vertex { public: aspen::Input<T> t; };
template class Third<Colour>;
template class Third<unsigned int>;
}
)src");
  CHECK(names(vertices) ==
        Names{"ops::First", "ops::Second", "ops::Third<Colour>", "ops::Third<unsigned int>"});
  CHECK(fieldNames(vertices[1]) == Names{"y"});
  CHECK(vertices[2].qualifiedType == "::ops::Third<Colour>");
}

TEST_CASE("parser rejects what it cannot bind, with file and line", "[codelets]") {
  SECTION("private field") {
    try {
      parse("#include <aspen/Vertex.hpp>\nclass P : public aspen::Vertex {\n  int hidden;\n};\n");
      FAIL("expected codelet_error");
    } catch (const aspen::codelet_error &e) {
      const std::string message = e.what();
      CHECK_THAT(message, Catch::Contains("/virtual/user_codelets.cpp:3"));
      CHECK_THAT(message, Catch::Contains("'hidden'"));
      CHECK_THAT(message, Catch::Contains("'P'"));
      CHECK_THAT(message, Catch::Contains("private"));
    }
  }
  SECTION("anonymous namespace") {
    CHECK_THROWS_WITH(parse("#include <aspen/Vertex.hpp>\nnamespace {\nstruct A : aspen::Vertex "
                            "{};\n}\n"),
                      Catch::Contains("user_codelets.cpp:3") && Catch::Contains("anonymous"));
  }
  SECTION("unbalanced braces") {
    CHECK_THROWS_AS(parseVertexClasses("# 1 \"/w/u.cpp\"\nstruct A : Vertex {\n int a;\n", {}),
                    aspen::codelet_error);
    CHECK_THROWS_WITH(parseVertexClasses("# 1 \"/w/u.cpp\"\nint x;\n}\n", {}),
                      Catch::Contains("/w/u.cpp:2"));
  }
}
