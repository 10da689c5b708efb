// Codelet mistakes are user errors (codelet_error) whose messages point at the user's file.
#include "TestPaths.hpp"

#include <catch2/catch.hpp>

#include "codelets/CodeletLibrary.hpp"

#include <aspen/Error.hpp>

#include <functional>
#include <string>

using namespace aspen;
using namespace aspen::detail;

namespace {

const std::string kDir = aspen::test::codeletsDir();

std::string messageOf(const std::function<void()> &action) {
  try {
    action();
  } catch (const codelet_error &e) {
    return e.what();
  }
  FAIL("expected aspen::codelet_error");
  return {};
}

} // namespace

TEST_CASE("a compile error names the user's file and line with the compiler's text", "[codelets]") {
  const std::string path = kDir + "/cc_syntax_error.cpp";
  const std::string message = messageOf([&] { CodeletLibrary::compileFile(path); });
  CHECK_THAT(message, Catch::Contains(path + ":9:"));
  CHECK_THAT(message, Catch::Contains("undeclaredName"));
  CHECK_THAT(message, Catch::Contains("error"));
  CHECK_THAT(message, !Catch::Contains("aspen wrapper"));
}

TEST_CASE("a compile error in source text names the given path", "[codelets]") {
  const std::string message = messageOf([] {
    CodeletLibrary::compileSource("my/kernels.cpp", "#include <aspen/Vertex.hpp>\n"
                                                    "struct V : aspen::Vertex {\n"
                                                    "  aspen::Input<float> in\n"
                                                    "  void compute() {}\n"
                                                    "};\n");
  });
  CHECK_THAT(message, Catch::Contains("my/kernels.cpp:3:") || Catch::Contains("my/kernels.cpp:4:"));
  CHECK_THAT(message, Catch::Contains("expected"));
}

TEST_CASE("a missing #include is reported against the user's file", "[codelets]") {
  const std::string message = messageOf([] {
    CodeletLibrary::compileSource("dir/missing_header.cpp", "\n#include \"no_such_header.hpp\"\n");
  });
  CHECK_THAT(message, Catch::Contains("dir/missing_header.cpp:2"));
  CHECK_THAT(message, Catch::Contains("no_such_header.hpp"));
}

TEST_CASE("a missing codelet file is named in the error", "[codelets]") {
  const std::string path = kDir + "/cc_does_not_exist.cpp";
  CHECK_THAT(messageOf([&] { CodeletLibrary::compileFile(path); }), Catch::Contains(path));
  CHECK_THAT(messageOf([&] { CodeletLibrary::loadPrecompiled(path + ".gp"); }),
             Catch::Contains(path + ".gp"));
}

TEST_CASE("a file that is not a codelet library is rejected by loadPrecompiled", "[codelets]") {
  const std::string path = kDir + "/cc_fields.cpp";
  CHECK_THAT(messageOf([&] { CodeletLibrary::loadPrecompiled(path); }), Catch::Contains(path));
}

TEST_CASE("the same vertex name from two files is rejected by the registry", "[codelets]") {
  const std::string a = kDir + "/cc_dup_a.cpp", b = kDir + "/cc_dup_b.cpp";
  CodeletRegistry registry;
  registry.add(CodeletLibrary::compileFile(a));
  registry.add(CodeletLibrary::compileFile(a)); // the same file twice is fine
  CHECK(registry.libraries().size() == 1);
  const std::string message = messageOf([&] { registry.add(CodeletLibrary::compileFile(b)); });
  CHECK_THAT(message, Catch::Contains("'cc::Duplicate'"));
  CHECK_THAT(message, Catch::Contains(a));
  CHECK_THAT(message, Catch::Contains(b));
  // The registry is unchanged: the first definition still runs.
  const VertexTypeInfo *type = registry.find("cc :: Duplicate");
  REQUIRE(type != nullptr);
  int out = 0;
  const FieldDesc fields[] = {{&out, 1}};
  CHECK(type->entry(fields, 0, 1) == 1);
  CHECK(out == 1);
  CHECK(registry.find("cc::Other") == nullptr);
}

TEST_CASE("source the parser cannot read is reported with file and line", "[codelets]") {
  const std::string message = messageOf([] {
    CodeletLibrary::compileSource("bad/fields.cpp", "#include <aspen/Vertex.hpp>\n"
                                                    "class V : public aspen::Vertex {\n"
                                                    "  aspen::Input<float> in;\n"
                                                    "};\n");
  });
  CHECK_THAT(message, Catch::Contains("bad/fields.cpp:3"));
  CHECK_THAT(message, Catch::Contains("'in'") && Catch::Contains("private"));
}
