// The codelet parser on damaged source: every truncation and many random edits of a realistic
// codelet file either parse or raise codelet_error — never crash, hang or throw anything else.
#include "codelets/CodeletParser.hpp"

#include <aspen/Error.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <string>

using namespace aspen;

namespace {
// Preprocessed text as g++ -E would give it (linemarker, then the user's code).
const std::string kSource = R"src(# 1 "/virtual/damaged.cpp"
namespace aspen { class Vertex {}; class MultiVertex {}; template <class T> struct Input {};
template <class T> struct Output {}; template <class T> struct Vector {}; }
# 4 "/virtual/damaged.cpp"
namespace demo::inner {
template <typename T, bool Flag>
class [[poplar::constraint("elem(*a) != elem(*b)")]] Scale : public aspen::MultiVertex {
public:
  Scale();
  aspen::Input<aspen::Vector<T>> in;
  aspen::Output<aspen::Vector<T>> out;
  const unsigned short size = 4, other;
  static constexpr int kNope = 3;
  using Alias = T;
  struct Nested { int x; };
  void compute(unsigned workerId) { for (unsigned i = workerId; i < size; ++i) { out[i] = in[i] * T(2); } }
};
template class Scale<float, true>;
template class demo::inner::Scale<int, false>;
struct Plain : aspen::Vertex { float x; bool compute() { return x > 0 ? true : false; } };
}
)src";

void parseOrCodeletError(const std::string &text) {
  try {
    detail::parseVertexClasses(text, {});
  } catch (const codelet_error &) {
    // A clear error is the expected outcome for broken source.
  }
}
} // namespace

TEST_CASE("the undamaged robustness source parses as expected", "[unit][codelets]") {
  const auto vertices = detail::parseVertexClasses(kSource, {});
  std::map<std::string, std::size_t> fieldCounts;
  for (const auto &v : vertices)
    fieldCounts[v.name] = v.fields.size();
  // in, out, size, other for both instances of the template; x for Plain.
  REQUIRE(fieldCounts == std::map<std::string, std::size_t>{{"demo::inner::Plain", 1},
                                                            {"demo::inner::Scale<float,true>", 4},
                                                            {"demo::inner::Scale<int,false>", 4}});
}

TEST_CASE("every truncation of a codelet source parses or raises codelet_error", "[unit][codelets]") {
  for (std::size_t n = 0; n <= kSource.size(); ++n) {
    INFO("truncated to " << n << " bytes");
    REQUIRE_NOTHROW(parseOrCodeletError(kSource.substr(0, n)));
  }
}

TEST_CASE("random edits of a codelet source parse or raise codelet_error", "[unit][codelets]") {
  const std::string alphabet = "{}()<>[];:,=*&\"'#/\\ \n\tabcT0";
  std::mt19937 rng(77);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = kSource;
    for (int edits = 1 + rng() % 4; edits > 0; --edits) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 3) {
      case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
      case 1: text.erase(at, 1 + rng() % 8); break;
      case 2: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
    }
    INFO("trial " << trial);
    REQUIRE_NOTHROW(parseOrCodeletError(text));
  }
}

// Found by fuzz/fuzz_codelet_parser: a member with nothing but qualifiers or '*' before its name
// was a field with an empty type. It is refused, naming the member.
TEST_CASE("a member without a type is refused and named", "[unit][codelets]") {
  for (const char *member : {"const more;", "* more;", "const & more;"}) {
    INFO(member);
    const std::string text = "# 1 \"/virtual/untyped.cpp\"\nnamespace aspen { class Vertex {}; }\n"
                             "struct V : aspen::Vertex {\n  " +
                             std::string(member) + "\n  bool compute() { return true; }\n};\n";
    REQUIRE_THROWS_AS(detail::parseVertexClasses(text, {}), codelet_error);
    REQUIRE_THROWS_WITH(detail::parseVertexClasses(text, {}),
                        Catch::Contains("untyped.cpp:3") && Catch::Contains("'more'"));
  }
  // Every field of what parses has a name and a type (here, over the random edits above).
  std::mt19937 rng(78);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text = kSource;
    const std::size_t at = rng() % text.size();
    text.erase(at, 1 + rng() % 12);
    try {
      for (const detail::ParsedVertex &v : detail::parseVertexClasses(text, {}))
        for (const detail::ParsedField &f : v.fields) {
          INFO("trial " << trial << ", vertex " << v.name);
          REQUIRE(!f.name.empty());
          REQUIRE(!f.typeSpelling.empty());
        }
    } catch (const codelet_error &) {
    }
  }
}
