// Discovery of vertex classes: a tokenizer for preprocessed text that keeps only the user's
// files, and a recursive-descent reader of namespace scopes and class bodies that skips
// everything it does not need (function bodies, nested types, static members ...).
#include "CodeletParser.hpp"

#include "CodeletLibrary.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>

namespace aspen::detail {
namespace {

struct Token {
  std::string text;
  unsigned file = 0; // index into the parser's file table
  unsigned line = 0;
  bool isIdentifier = false;
};

bool isIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}
bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// Splits preprocessed text into tokens, following linemarkers to know the file and line of each
// token and dropping tokens from system headers and from ignored directories.
class Tokenizer {
public:
  Tokenizer(std::string_view text, const std::vector<std::string> &ignoredDirs)
      : text_(text), ignoredDirs_(ignoredDirs) {}

  std::vector<Token> run(std::vector<std::string> &files) {
    std::vector<Token> tokens;
    bool atLineStart = true;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
        atLineStart = true;
        continue;
      }
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
        continue;
      }
      if (c == '#' && atLineStart) {
        directive(files);
        continue;
      }
      atLineStart = false;
      Token token = next();
      if (keep_) {
        token.file = file_;
        tokens.push_back(std::move(token));
      }
    }
    return tokens;
  }

private:
  // `# 12 "file" 1 3` sets the location of the next line; other directives (#pragma) are skipped.
  void directive(std::vector<std::string> &files) {
    const std::size_t end = std::min(text_.find('\n', pos_), text_.size());
    const std::string_view body = text_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end;
    std::size_t i = 0;
    while (i < body.size() && body[i] == ' ')
      ++i;
    if (body.substr(i, 4) == "line")
      i += 4;
    while (i < body.size() && body[i] == ' ')
      ++i;
    if (i >= body.size() || !std::isdigit(static_cast<unsigned char>(body[i])))
      return;
    unsigned number = 0;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i])))
      number = number * 10 + static_cast<unsigned>(body[i++] - '0');
    const std::size_t open = body.find('"', i);
    if (open != std::string_view::npos) {
      std::string name;
      std::size_t j = open + 1;
      for (; j < body.size() && body[j] != '"'; ++j) {
        if (body[j] == '\\' && j + 1 < body.size())
          ++j;
        name += body[j];
      }
      const std::string_view flags = body.substr(std::min(j + 1, body.size()));
      const bool system = flags.find(" 3") != std::string_view::npos;
      file_ = fileIndex(files, name);
      keep_ = !system && isUserFile(name);
    }
    line_ = number - 1; // the directive's own newline advances to `number`
  }

  bool isUserFile(const std::string &name) const {
    if (name.empty() || name == "<built-in>" || name == "<command-line>" || name == "<stdin>")
      return false;
    for (const std::string &dir : ignoredDirs_)
      if (!dir.empty() && name.compare(0, dir.size(), dir) == 0 &&
          (name.size() == dir.size() || name[dir.size()] == '/' || dir.back() == '/'))
        return false;
    return true;
  }

  static unsigned fileIndex(std::vector<std::string> &files, const std::string &name) {
    for (unsigned i = 0; i < files.size(); ++i)
      if (files[i] == name)
        return i;
    files.push_back(name);
    return static_cast<unsigned>(files.size() - 1);
  }

  Token next() {
    Token token;
    token.line = line_;
    const std::size_t start = pos_;
    const char c = text_[pos_];
    if (isIdentStart(c)) {
      while (pos_ < text_.size() && isIdentChar(text_[pos_]))
        ++pos_;
      const std::string_view word = text_.substr(start, pos_ - start);
      if (pos_ < text_.size() && (text_[pos_] == '"' || text_[pos_] == '\'')) {
        if (text_[pos_] == '"' && !word.empty() && word.back() == 'R')
          return rawString(start, token);
        if (word == "u8" || word == "u" || word == "U" || word == "L")
          return quoted(start, token);
      }
      token.text = std::string(word);
      token.isIdentifier = true;
      return token;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && pos_ + 1 < text_.size() &&
         std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) {
      while (pos_ < text_.size()) {
        const char d = text_[pos_];
        if ((d == '+' || d == '-') && std::strchr("eEpP", text_[pos_ - 1]) != nullptr)
          ++pos_;
        else if (isIdentChar(d) || d == '.' || d == '\'')
          ++pos_;
        else
          break;
      }
      token.text = std::string(text_.substr(start, pos_ - start));
      return token;
    }
    if (c == '"' || c == '\'')
      return quoted(start, token);
    if (text_.substr(pos_, 2) == "::" || text_.substr(pos_, 3) == "...") {
      pos_ += text_[pos_] == ':' ? 2 : 3;
      token.text = std::string(text_.substr(start, pos_ - start));
      return token;
    }
    ++pos_;
    token.text = std::string(1, c);
    return token;
  }

  Token quoted(std::size_t start, Token &token) {
    while (text_[pos_] != '"' && text_[pos_] != '\'')
      ++pos_;
    const char quote = text_[pos_++];
    while (pos_ < text_.size() && text_[pos_] != quote && text_[pos_] != '\n') {
      if (text_[pos_] == '\\')
        ++pos_;
      ++pos_;
    }
    ++pos_;
    token.text = std::string(text_.substr(start, std::min(pos_, text_.size()) - start));
    return token;
  }

  Token rawString(std::size_t start, Token &token) {
    const std::size_t open = text_.find('(', pos_);
    const std::string delimiter = ")" + std::string(text_.substr(pos_ + 1, open - pos_ - 1)) + "\"";
    const std::size_t close = text_.find(delimiter, open);
    const std::size_t end =
        close == std::string_view::npos ? text_.size() : close + delimiter.size();
    for (std::size_t i = pos_; i < end; ++i)
      line_ += text_[i] == '\n';
    pos_ = end;
    token.text = std::string(text_.substr(start, end - start));
    return token;
  }

  std::string_view text_;
  const std::vector<std::string> &ignoredDirs_;
  std::size_t pos_ = 0;
  unsigned file_ = 0;
  unsigned line_ = 1;
  bool keep_ = true;
};

const char *const kVertexBases[] = {"Vertex", "MultiVertex", "BlockVertex", "SupervisorVertex",
                                    "SupervisorVertexIf"};

enum class Access { Public, Protected, Private };

struct VertexTemplate {
  std::string qualifiedName; // "ns::V"
  ParsedVertex prototype;    // fields, file and line
};

struct Instantiation {
  std::vector<std::string> scope; // the namespace it appears in
  bool global = false;            // written with a leading ::
  std::string writtenName;        // "ns::V"
  std::string arguments;          // normalised, without the angle brackets
  unsigned file = 0, line = 0;
};

class Parser {
public:
  Parser(std::vector<Token> tokens, std::vector<std::string> files)
      : tokens_(std::move(tokens)), files_(std::move(files)) {}

  std::vector<ParsedVertex> run() {
    namespaceScope(false);
    for (const Instantiation &inst : instantiations_)
      instantiate(inst);
    return std::move(vertices_);
  }

private:
  // --- token access ---------------------------------------------------------------------
  bool atEnd() const { return pos_ >= tokens_.size(); }
  const Token &peek(std::size_t ahead = 0) const {
    static const Token kEnd{"", 0, 0, false};
    return pos_ + ahead < tokens_.size() ? tokens_[pos_ + ahead] : kEnd;
  }
  bool is(std::string_view text, std::size_t ahead = 0) const { return peek(ahead).text == text; }
  const Token &take() {
    const Token &t = peek();
    if (!atEnd())
      ++pos_;
    return t;
  }

  [[noreturn]] void fail(const Token &at, const std::string &message) const {
    const Token &where = atEnd() && !tokens_.empty() && at.text.empty() ? tokens_.back() : at;
    const std::string file = fileName(where.file);
    throw codelet_error(file + ":" + std::to_string(where.line) + ": " + message);
  }
  void expect(std::string_view text) {
    if (!is(text))
      fail(peek(), "expected '" + std::string(text) + "' but found " +
                       (atEnd() ? std::string("the end of the file") : "'" + peek().text + "'"));
    take();
  }

  // Skips a balanced (), [], {} or <> group starting at the current opening token.
  void skipGroup() {
    const Token &open = peek();
    const std::string openText = open.text;
    const std::string close = openText == "("   ? ")"
                              : openText == "[" ? "]"
                              : openText == "{" ? "}"
                                                : ">";
    take();
    int depth = 1;
    int parens = 0; // inside <...>, parentheses hide comparison operators
    while (!atEnd()) {
      const std::string &t = peek().text;
      if (openText == "<") {
        if (t == "(" || t == "[" || t == "{")
          ++parens;
        else if (t == ")" || t == "]" || t == "}")
          --parens;
        else if (parens == 0 && t == "<")
          ++depth;
        else if (parens == 0 && t == ">" && --depth == 0) {
          take();
          return;
        }
      } else if (t == openText) {
        ++depth;
      } else if (t == close && --depth == 0) {
        take();
        return;
      }
      take();
    }
    fail(open, "unbalanced '" + openText + "'");
  }

  // Collects the text of a balanced <...> group (without the brackets).
  std::string angleGroupText() {
    const std::size_t begin = pos_ + 1;
    skipGroup();
    std::string text;
    for (std::size_t i = begin; i + 1 < pos_; ++i) {
      if (!text.empty())
        text += ' ';
      text += tokens_[i].text;
    }
    return text;
  }

  // [[...]], alignas(...), __attribute__((...)), __declspec(...)
  bool skipAttribute() {
    if (is("[") && is("[", 1)) {
      skipGroup();
      return true;
    }
    if ((is("alignas") || is("__attribute__") || is("__declspec")) && is("(", 1)) {
      take();
      skipGroup();
      return true;
    }
    return false;
  }

  // --- namespace scope -----------------------------------------------------------------
  void namespaceScope(bool nested) {
    while (!atEnd()) {
      if (is("}")) {
        if (!nested)
          fail(peek(), "unmatched '}'");
        take();
        return;
      }
      if (is("namespace") || (is("inline") && is("namespace", 1)))
        namespaceDefinition();
      else if (is("extern") && is("{", 2) && peek(1).text.starts_with('"')) {
        take();
        take();
        take();
        namespaceScope(true);
      } else if (is("extern") && is("template")) {
        skipToSemicolon();
      } else if (is("template"))
        templateDeclaration();
      else if (is("class") || is("struct"))
        classHead(std::nullopt);
      else if (is("enum") || is("union") || is("typedef") || is("using"))
        skipToSemicolon();
      else if (is("{") || is("(") || is("["))
        skipGroup();
      else if (is(")") || is("]"))
        fail(peek(), "unmatched '" + peek().text + "'");
      else
        take();
    }
    if (nested)
      fail(Token{}, "missing '}' at the end of the file");
  }

  void namespaceDefinition() {
    if (is("inline"))
      take();
    const Token &keyword = take();
    std::vector<std::string> names;
    while (peek().isIdentifier || is("::") || is("inline")) {
      if (peek().isIdentifier && !is("inline"))
        names.push_back(peek().text);
      take();
    }
    while (skipAttribute()) {
    }
    if (is("=")) { // namespace alias
      skipToSemicolon();
      return;
    }
    if (!is("{"))
      fail(keyword, "malformed namespace declaration");
    take();
    if (names.empty())
      names.push_back(""); // anonymous
    for (const std::string &n : names)
      scope_.push_back(n);
    namespaceScope(true);
    scope_.resize(scope_.size() - names.size());
  }

  void skipToSemicolon() {
    while (!atEnd() && !is(";")) {
      if (is("{") || is("(") || is("["))
        skipGroup();
      else if (is("}"))
        fail(peek(), "unexpected '}'");
      else
        take();
    }
    take();
  }

  // `template <...> class V ...`, `template <> class V<float> ...` or an explicit
  // instantiation `template class V<float>;`.
  void templateDeclaration() {
    const Token &keyword = take();
    if (is("<")) {
      const bool explicitSpecialization = is(">", 1);
      skipGroup();
      while (is("template") && is("<", 1)) { // member templates of class templates
        take();
        skipGroup();
      }
      if (is("class") || is("struct"))
        classHead(explicitSpecialization ? TemplateKind::Specialization : TemplateKind::Primary);
      return; // any other templated declaration is skipped by the scope loop
    }
    if (is("class") || is("struct")) {
      take();
      Instantiation inst;
      inst.scope = scope_;
      inst.file = keyword.file;
      inst.line = keyword.line;
      if (is("::")) {
        inst.global = true;
        take();
      }
      while (peek().isIdentifier || is("::"))
        inst.writtenName += take().text;
      if (!is("<") || inst.writtenName.empty())
        fail(keyword, "malformed explicit instantiation");
      inst.arguments = normalizeVertexName(angleGroupText());
      expect(";");
      instantiations_.push_back(std::move(inst));
    }
  }

  enum class TemplateKind { Primary, Specialization };

  // A class head at namespace scope; reads the body when the class is a vertex.
  void classHead(std::optional<TemplateKind> templateKind) {
    const Token &keyword = take();
    const bool isStruct = keyword.text == "struct";
    while (skipAttribute()) {
    }
    std::string name;
    unsigned nameLine = keyword.line;
    while (peek().isIdentifier || is("::")) {
      if (is("final") && (is(":", 1) || is("{", 1)))
        break;
      nameLine = peek().line;
      name += take().text;
    }
    std::string arguments;
    if (is("<"))
      arguments = normalizeVertexName(angleGroupText());
    if (is("final"))
      take();
    bool vertex = false;
    if (is(":")) {
      take();
      vertex = readBases();
    }
    if (!is("{"))
      return; // a declaration or an elaborated type, not a definition
    const bool partialSpecialization = templateKind == TemplateKind::Primary && !arguments.empty();
    if (!vertex || name.empty() || partialSpecialization) {
      skipGroup(); // a partial specialization's instances are read from the primary template
      return;
    }
    for (const std::string &s : scope_)
      if (s.empty())
        fail(keyword, "vertex class '" + name +
                          "' is in an anonymous namespace; vertex classes need a name the "
                          "host can refer to");
    ParsedVertex parsed;
    parsed.file = fileName(keyword.file);
    parsed.line = nameLine;
    const std::string prefix = joinScope(scope_, scope_.size());
    const std::string qualified = prefix.empty() ? name : prefix + "::" + name;
    classBody(parsed, isStruct ? Access::Public : Access::Private, qualified);
    if (templateKind == TemplateKind::Primary) {
      templates_.push_back({qualified, std::move(parsed)});
      return;
    }
    const std::string fullName = arguments.empty() ? qualified : qualified + "<" + arguments + ">";
    parsed.name = normalizeVertexName(fullName);
    parsed.qualifiedType = "::" + parsed.name;
    parsed.scope = joinScope(scope_, scope_.size());
    vertices_.push_back(std::move(parsed));
  }

  // The base-clause; true when one base is a vertex base class.
  bool readBases() {
    bool vertex = false;
    while (!atEnd() && !is("{") && !is(";")) {
      std::vector<std::string> path;
      while (!atEnd() && !is(",") && !is("{") && !is(";")) {
        if (is("<")) {
          skipGroup();
          continue;
        }
        const Token &t = take();
        if (t.isIdentifier && t.text != "public" && t.text != "private" && t.text != "protected" &&
            t.text != "virtual")
          path.push_back(t.text);
      }
      if (is(","))
        take();
      if (path.empty())
        continue;
      bool isVertexBase = false;
      for (const char *base : kVertexBases)
        isVertexBase |= path.back() == base;
      const bool qualifierOk =
          path.size() == 1 || (path.size() == 2 && (path[0] == "aspen" || path[0] == "poplar"));
      vertex |= isVertexBase && qualifierOk;
    }
    return vertex;
  }

  // --- class body ----------------------------------------------------------------------
  void classBody(ParsedVertex &vertex, Access access, const std::string &className) {
    const Token &open = take();
    while (true) {
      if (atEnd())
        fail(open, "missing '}' at the end of class '" + className + "'");
      if (is("}")) {
        take();
        return;
      }
      if ((is("public") || is("private") || is("protected")) && is(":", 1)) {
        access = is("public")    ? Access::Public
                 : is("private") ? Access::Private
                                 : Access::Protected;
        take();
        take();
        continue;
      }
      if (is(";")) {
        take();
        continue;
      }
      if (skipAttribute())
        continue;
      memberDeclaration(vertex, access, className);
    }
  }

  static bool isSkippedMemberKeyword(const std::string &t) {
    return t == "using" || t == "typedef" || t == "friend" || t == "static_assert" ||
           t == "static" || t == "enum" || t == "class" || t == "struct" || t == "union" ||
           t == "virtual" || t == "explicit" || t == "inline" || t == "constexpr" ||
           t == "consteval" || t == "operator" || t == "~" || t == "template";
  }

  // Whether the member declaration starting at the current token declares a function: a
  // top-level '(' before any initializer that is not part of decltype/alignas/noexcept/...
  bool declaresFunction() const {
    int angle = 0;
    for (std::size_t i = pos_; i < tokens_.size(); ++i) {
      const std::string &t = tokens_[i].text;
      if (t == "operator")
        return true;
      if (t == ";" || t == "=" || t == "{" || t == "}" || (t == ":" && angle == 0))
        return false;
      if (t == "<")
        ++angle;
      else if (t == ">")
        angle = std::max(0, angle - 1);
      else if (t == "(") {
        const std::string &before = i > pos_ ? tokens_[i - 1].text : std::string();
        if (before == "decltype" || before == "alignas" || before == "sizeof" ||
            before == "__attribute__" || before == "alignof" || before == "noexcept" || angle > 0) {
          // skip the group
          int depth = 0;
          for (; i < tokens_.size(); ++i) {
            depth += tokens_[i].text == "(";
            depth -= tokens_[i].text == ")";
            if (depth == 0)
              break;
          }
          continue;
        }
        return true;
      }
    }
    return false;
  }

  void memberDeclaration(ParsedVertex &vertex, Access access, const std::string &className) {
    bool skipped = false;
    while (isSkippedMemberKeyword(peek().text)) {
      skipped = true;
      if (is("template") && is("<", 1)) {
        take();
        skipGroup();
      } else {
        take();
      }
    }
    if (declaresFunction()) {
      skipFunction();
      return;
    }
    const std::size_t begin = pos_;
    skipToSemicolon();
    if (!skipped)
      dataMembers(vertex, access, className, begin, pos_ - 1);
  }

  // Skips a member function declaration or definition, with a constructor's member
  // initializer list.
  void skipFunction() {
    while (!atEnd()) {
      if (is("(") || is("[")) {
        skipGroup();
      } else if (is(";")) {
        take();
        return;
      } else if (is("{")) {
        skipGroup();
        return;
      } else if (is("=")) {
        skipToSemicolon();
        return;
      } else if (is(":")) { // mem-initializer list: name(...) or name{...}, then the body
        take();
        while (!atEnd() && !is("{")) {
          while (!atEnd() && !is("(") && !is("{")) {
            if (is("<"))
              skipGroup();
            else
              take();
          }
          skipGroup();
          if (is("..."))
            take();
          if (is(","))
            take();
        }
        if (!is("{"))
          fail(peek(), "malformed constructor");
        skipGroup();
        return;
      } else if (is("}")) {
        fail(peek(), "unexpected '}' in a member function declaration");
      } else {
        take();
      }
    }
  }

  static bool isTypeQualifier(const std::string &t) {
    return t == "const" || t == "volatile" || t == "mutable";
  }

  // Reads `Type a, *b = 1, c[4];` from tokens [begin, end) into fields.
  void dataMembers(ParsedVertex &vertex, Access access, const std::string &className,
                   std::size_t begin, std::size_t end) {
    std::vector<std::pair<std::size_t, std::size_t>> declarators; // token ranges before init
    int depth = 0, angle = 0;
    bool inInitializer = false;
    std::size_t start = begin, stop = end;
    for (std::size_t i = begin; i < end; ++i) {
      const std::string &t = tokens_[i].text;
      if (t == "(" || t == "[" || (t == "{" && (depth > 0 || inInitializer)))
        ++depth;
      else if (t == ")" || t == "]" || (t == "}" && depth > 0))
        --depth;
      else if (depth == 0 && !inInitializer) {
        if (t == "<")
          ++angle;
        else if (t == ">")
          --angle;
        else if (angle == 0 && (t == "=" || t == "{" || t == ":")) {
          if (t == ":")
            fail(tokens_[i], "bit-field '" + tokens_[i - 1].text + "' in vertex class '" +
                                 className + "' cannot be a field");
          inInitializer = true;
          stop = i;
          if (t == "{")
            ++depth;
        } else if (angle == 0 && t == ",") {
          declarators.emplace_back(start, i);
          start = i + 1;
          stop = end;
        }
      } else if (depth == 0 && t == ",") {
        declarators.emplace_back(start, stop);
        start = i + 1;
        stop = end;
        inInitializer = false;
      }
    }
    declarators.emplace_back(start, inInitializer ? stop : end);

    std::string typeSpelling;
    bool isConst = false;
    for (std::size_t d = 0; d < declarators.size(); ++d) {
      auto [from, to] = declarators[d];
      // The name: the last identifier outside brackets.
      std::size_t nameAt = to;
      int brackets = 0;
      for (std::size_t i = from; i < to; ++i) {
        if (tokens_[i].text == "[")
          ++brackets;
        else if (tokens_[i].text == "]")
          --brackets;
        else if (brackets == 0 && tokens_[i].isIdentifier && !isTypeQualifier(tokens_[i].text))
          nameAt = i;
      }
      if (nameAt == to || (d == 0 && nameAt == from))
        fail(tokens_[from], "cannot read a member declaration of vertex class '" + className + "'");
      if (d == 0) {
        std::string spelling;
        for (std::size_t i = from; i < nameAt; ++i) {
          const std::string &t = tokens_[i].text;
          if (t == "const")
            isConst = true;
          if (isTypeQualifier(t) || t == "*" || t == "&")
            continue;
          if (!spelling.empty())
            spelling += ' ';
          spelling += t;
        }
        typeSpelling = normalizeVertexName(spelling);
        if (typeSpelling.empty()) // only qualifiers, '*' or '&' before the name
          fail(tokens_[nameAt], "cannot read the type of member '" + tokens_[nameAt].text +
                                    "' of vertex class '" + className + "'");
      }
      const Token &name = tokens_[nameAt];
      if (access != Access::Public)
        fail(name, "field '" + name.text + "' of vertex class '" + className + "' is " +
                       (access == Access::Private ? "private" : "protected") +
                       "; vertex fields must be public");
      ParsedField field;
      field.name = name.text;
      field.typeSpelling = typeSpelling;
      field.kind = spelledKind(typeSpelling);
      field.isConst = isConst;
      field.line = name.line;
      vertex.fields.push_back(std::move(field));
    }
  }

  static SpelledFieldKind spelledKind(const std::string &spelling) {
    std::string_view s = spelling;
    for (std::string_view prefix : {"::", "aspen::", "poplar::"})
      if (s.substr(0, prefix.size()) == prefix)
        s.remove_prefix(prefix.size());
    const std::pair<std::string_view, SpelledFieldKind> kinds[] = {
        {"Input<", SpelledFieldKind::Input},
        {"Output<", SpelledFieldKind::Output},
        {"InOut<", SpelledFieldKind::InOut},
        {"Vector<", SpelledFieldKind::Vector}};
    for (const auto &[prefix, kind] : kinds)
      if (s.substr(0, prefix.size()) == prefix)
        return kind;
    return SpelledFieldKind::Plain;
  }

  // "a::b" from the first `count` names of a namespace path.
  static std::string joinScope(const std::vector<std::string> &scope, std::size_t count) {
    std::string out;
    for (std::size_t i = 0; i < count; ++i)
      out += (i ? "::" : "") + scope[i];
    return out;
  }

  // --- explicit instantiations ----------------------------------------------------------
  void instantiate(const Instantiation &inst) {
    const VertexTemplate *found = nullptr;
    for (std::size_t keep = inst.global ? 0 : inst.scope.size() + 1; keep-- > 0 && !found;) {
      const std::string prefix = joinScope(inst.scope, keep);
      const std::string candidate =
          prefix.empty() ? inst.writtenName : prefix + "::" + inst.writtenName;
      for (const VertexTemplate &t : templates_)
        if (t.qualifiedName == candidate)
          found = &t;
    }
    if (inst.global)
      for (const VertexTemplate &t : templates_)
        if (t.qualifiedName == inst.writtenName)
          found = &t;
    if (!found)
      return; // an instantiation of some other template
    ParsedVertex vertex = found->prototype;
    vertex.name = normalizeVertexName(found->qualifiedName + "<" + inst.arguments + ">");
    vertex.qualifiedType = "::" + vertex.name;
    vertex.scope = joinScope(inst.scope, inst.scope.size());
    for (const ParsedVertex &v : vertices_)
      if (v.name == vertex.name)
        return; // instantiated twice
    vertices_.push_back(std::move(vertex));
  }

  std::vector<Token> tokens_;
  // Source without a linemarker naming its file (damaged or hand-made text) still gets a name.
  std::string fileName(unsigned index) const {
    return index < files_.size() ? files_[index] : "<codelet>";
  }
  std::vector<std::string> files_;
  std::size_t pos_ = 0;
  std::vector<std::string> scope_;
  std::vector<VertexTemplate> templates_;
  std::vector<Instantiation> instantiations_;
  std::vector<ParsedVertex> vertices_;
};

} // namespace

std::vector<ParsedVertex> parseVertexClasses(std::string_view preprocessed,
                                             const std::vector<std::string> &ignoredDirs) {
  std::vector<std::string> files;
  std::vector<Token> tokens = Tokenizer(preprocessed, ignoredDirs).run(files);
  return Parser(std::move(tokens), std::move(files)).run();
}

} // namespace aspen::detail
