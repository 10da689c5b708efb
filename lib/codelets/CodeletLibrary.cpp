// Codelet libraries: compile (preprocess, discover, generate the wrapper, compile, cache), load
// a shared object and read its metadata, and the registry of vertex types by name.
#include "CodeletLibrary.hpp"

#include "CodeletCache.hpp"
#include "CodeletParser.hpp"
#include "ContentHash.hpp"
#include "HostCompiler.hpp"
#include "Subprocess.hpp"
#include "WrapperGenerator.hpp"
#include "support/Logging.hpp"

#include <aspen/Error.hpp>
#include <aspen/detail/VertexWrapper.hpp>

#include <cctype>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <filesystem>
#include <mutex>

namespace aspen::detail {

namespace fs = std::filesystem;

// The compiled metadata's codes are aspen::TypeId values.
#define ASPEN_CHECK_TYPE_CODE(e, c, n, h, s, f, sg)                                                \
  static_assert(ElementTypeCode<h>::value == static_cast<unsigned char>(TypeId::e));
ASPEN_FOR_EACH_TYPE(ASPEN_CHECK_TYPE_CODE)
#undef ASPEN_CHECK_TYPE_CODE

struct CodeletLibrary::Impl {
  void *handle = nullptr;
  ~Impl() {
    if (handle)
      dlclose(handle);
  }
  // Loads a shared object written by compileSource or aspen-cc; `bytes` become binary().
  static std::shared_ptr<const CodeletLibrary>
  load(const fs::path &soPath, const std::string &displayName, std::string bytes);
};

namespace {

// Libraries alive in this process by content hash, so that adding the same file twice gives
// the same library (and loads the shared object once).
std::mutex liveLibrariesMutex;
std::unordered_map<std::string, std::weak_ptr<const CodeletLibrary>> liveLibraries;

std::shared_ptr<const CodeletLibrary> findLive(const std::string &hash) {
  std::lock_guard lock(liveLibrariesMutex);
  auto it = liveLibraries.find(hash);
  return it == liveLibraries.end() ? nullptr : it->second.lock();
}

std::shared_ptr<const CodeletLibrary> rememberLive(std::shared_ptr<const CodeletLibrary> lib) {
  std::lock_guard lock(liveLibrariesMutex);
  std::weak_ptr<const CodeletLibrary> &slot = liveLibraries[lib->contentHash()];
  if (auto existing = slot.lock())
    return existing; // another thread loaded it first
  slot = lib;
  return lib;
}

FieldInfo fieldInfo(const CodeletFieldRecord &record) {
  FieldInfo info;
  info.name = record.name;
  info.direction = static_cast<FieldDirection>(record.direction);
  info.shape = static_cast<FieldShape>(record.shape);
  info.elementType =
      record.typeCode < kNumTypes ? Type(static_cast<TypeId>(record.typeCode)) : Type();
  info.elementBytes = record.elementBytes;
  return info;
}

// Everything that decides what a compiled wrapper contains, besides the preprocessed source.
std::string compileConfiguration(const HostCompiler &compiler,
                                 const std::vector<std::string> &extraFlags) {
  std::string config = "format " + std::to_string(kCodeletFormatVersion) + "\n" + compiler.identity;
  for (const std::string &f : HostCompiler::sharedObjectFlags())
    config += "\n" + f;
  for (const std::string &f : extraFlags)
    config += "\n" + f;
  for (const char *header : {"aspen/Vertex.hpp", "aspen/detail/VertexWrapper.hpp"})
    config += "\n" + readWholeFile(fs::path(compiler.includeDir) / header);
  return config;
}

} // namespace

namespace {

// Why `bytes` cannot be a whole 64-bit little-endian ELF shared object, or empty. The loader
// maps segments without checking that the file holds them, so a file cut short would fault
// inside dlopen instead of failing: this checks every table and loaded segment lies in the file.
std::string notACompleteSharedObject(std::string_view bytes) {
  Elf64_Ehdr header;
  if (bytes.size() < sizeof header)
    return "it is too short to be a shared object";
  std::memcpy(&header, bytes.data(), sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return "it is not an ELF file";
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_type != ET_DYN)
    return "it is not a 64-bit little-endian shared object";
  const auto within = [&](std::uint64_t offset, std::uint64_t count, std::uint64_t size) {
    return offset <= bytes.size() && count <= (bytes.size() - offset) / (size ? size : 1);
  };
  if (header.e_phentsize != sizeof(Elf64_Phdr) ||
      !within(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr)))
    return "its program headers lie outside the file (it is cut short)";
  if (header.e_shoff != 0 && (header.e_shentsize != sizeof(Elf64_Shdr) ||
                              !within(header.e_shoff, header.e_shnum, sizeof(Elf64_Shdr))))
    return "its section headers lie outside the file (it is cut short)";
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, bytes.data() + header.e_phoff + i * sizeof segment, sizeof segment);
    if (segment.p_type == PT_LOAD && !within(segment.p_offset, segment.p_filesz, 1))
      return "a segment lies outside the file (it is cut short)";
  }
  return {};
}

} // namespace

CodeletLibrary::CodeletLibrary() : impl_(std::make_unique<Impl>()) {}
CodeletLibrary::~CodeletLibrary() = default;

std::shared_ptr<const CodeletLibrary> CodeletLibrary::Impl::load(const fs::path &soPath,
                                                                 const std::string &displayName,
                                                                 std::string bytes) {
  if (const std::string why = notACompleteSharedObject(bytes); !why.empty())
    throw codelet_error("cannot load codelet library '" + displayName + "': " + why);
  auto lib = std::shared_ptr<CodeletLibrary>(new CodeletLibrary());
  lib->impl_->handle = dlopen(fs::absolute(soPath).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->impl_->handle)
    throw codelet_error("cannot load codelet library '" + displayName + "': " + dlerror());
  auto libraryFunction =
      reinterpret_cast<CodeletLibraryFunction>(dlsym(lib->impl_->handle, kCodeletLibrarySymbol));
  if (!libraryFunction)
    throw codelet_error("'" + displayName +
                        "' is not an Aspen codelet library (one written by aspen-cc)");
  const CodeletLibraryRecord &record = *libraryFunction();
  if (record.formatVersion != kCodeletFormatVersion)
    throw codelet_error("codelet library '" + displayName + "' has format version " +
                        std::to_string(record.formatVersion) + " but this Aspen reads " +
                        std::to_string(kCodeletFormatVersion) + "; recompile it with aspen-cc");
  lib->sourceName_ = record.sourceName;
  lib->source_ = record.source;
  lib->hash_ = record.contentHash;
  lib->compileFlags_ = record.compileFlags;
  lib->binary_.assign(bytes.begin(), bytes.end());
  for (unsigned v = 0; v < record.numVertices; ++v) {
    const CodeletVertexRecord &vr = record.vertices[v];
    VertexTypeInfo type;
    type.name = vr.name;
    type.scope = vr.scope;
    type.isMultiVertex = vr.isMultiVertex != 0;
    type.isBlockVertex = vr.isBlockVertex != 0;
    type.coResident = vr.coResident != 0;
    type.maxThreadsPerBlock = vr.maxThreadsPerBlock;
    for (unsigned f = 0; f < vr.numFields; ++f)
      type.fields.push_back(fieldInfo(vr.fields[f]));
    type.entry = reinterpret_cast<VertexEntry>(dlsym(lib->impl_->handle, vr.entrySymbol));
    type.blockEntry =
        reinterpret_cast<BlockEntry>(dlsym(lib->impl_->handle, vr.blockEntrySymbol));
    if (!type.entry || !type.blockEntry)
      throw codelet_error("codelet library '" + displayName + "' lacks the entry points '" +
                          vr.entrySymbol + "' and '" + vr.blockEntrySymbol + "' of vertex '" +
                          type.name + "'");
    type.library = lib.get();
    lib->types_.push_back(std::move(type));
  }
  return lib;
}

std::shared_ptr<const CodeletLibrary> CodeletLibrary::compileSource(const std::string &path,
                                                                    const std::string &source,
                                                                    const std::string &extraFlags) {
  const HostCompiler &compiler = HostCompiler::get();
  const std::vector<std::string> flags = splitFlags(extraFlags);
  const std::string preprocessed = compiler.preprocess(path, source, flags);
  const std::vector<ParsedVertex> vertices =
      parseVertexClasses(preprocessed, {compiler.includeDir});
  const std::string hash =
      ContentHash().add(preprocessed).add(compileConfiguration(compiler, flags)).hex();
  if (auto live = findLive(hash))
    return live;

  const fs::path dir = codeletCacheDir();
  const fs::path soPath = dir / (hash + ".so");
  const auto compile = [&] {
    logger().debug("codelets '{}': compiling {} vertex types into {}", path, vertices.size(),
                   soPath.string());
    fs::create_directories(dir / "tmp");
    const fs::path wrapper = uniqueTempPath(dir / "tmp", hash, ".cpp");
    const fs::path output = uniqueTempPath(dir / "tmp", hash, ".so");
    writeFileAtomically(wrapper, generateWrapper(path, source, vertices, hash, extraFlags));
    std::error_code ec;
    try {
      compiler.compileSharedObject(path, wrapper.string(), output.string(), flags);
    } catch (...) {
      fs::remove(wrapper, ec);
      fs::remove(output, ec);
      throw;
    }
    fs::remove(wrapper, ec);
    fs::rename(output, soPath, ec);
    if (ec) {
      fs::remove(output, ec);
      throw codelet_error("cannot write the compiled codelets of '" + path + "' to '" +
                          soPath.string() + "': " + ec.message());
    }
  };
  std::shared_ptr<const CodeletLibrary> lib;
  if (fs::exists(soPath)) {
    logger().debug("codelets '{}': cached as {}", path, soPath.string());
    try {
      lib = Impl::load(soPath, path, readWholeFile(soPath));
    } catch (const codelet_error &e) {
      // A damaged entry (a disk error, a copy cut short) is a miss: replace it.
      logger().warn("the cached codelets of '{}' ({}) cannot be used, so they are compiled "
                    "again: {}",
                    path, soPath.string(), e.what());
      std::error_code ec;
      fs::remove(soPath, ec);
    }
  }
  if (!lib) {
    compile();
    lib = Impl::load(soPath, path, readWholeFile(soPath));
  }
  if (vertices.empty())
    logger().warn("codelet file '{}' defines no vertex class", path);
  if (lib->vertexTypes().size() != vertices.size())
    throw internal_error("codelet library '" + soPath.string() + "' of '" + path + "' has " +
                         std::to_string(lib->vertexTypes().size()) + " vertex types, expected " +
                         std::to_string(vertices.size()));
  return rememberLive(std::move(lib));
}

std::shared_ptr<const CodeletLibrary> CodeletLibrary::compileFile(const std::string &path,
                                                                  const std::string &extraFlags) {
  if (!fs::is_regular_file(path))
    throw codelet_error("codelet file '" + path + "' does not exist or is not a file");
  return compileSource(path, readWholeFile(path), extraFlags);
}

std::shared_ptr<const CodeletLibrary> CodeletLibrary::loadPrecompiled(const std::string &path) {
  if (!fs::is_regular_file(path))
    throw codelet_error("precompiled codelet file '" + path + "' does not exist or is not a file");
  return Impl::load(path, path, readWholeFile(path));
}

std::shared_ptr<const CodeletLibrary>
CodeletLibrary::loadBinary(const std::vector<std::uint8_t> &bytes) {
  const std::string_view view(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  const fs::path dir = codeletCacheDir() / "binaries";
  fs::create_directories(dir);
  const fs::path soPath = dir / (ContentHash().add(view).hex() + ".so");
  if (!fs::exists(soPath))
    writeFileAtomically(soPath, view);
  return Impl::load(soPath, "<serialised codelet library>", std::string(view));
}

int VertexTypeInfo::fieldIndex(std::string_view fieldName) const {
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name == fieldName)
      return static_cast<int>(i);
  return -1;
}

namespace {

bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

bool isIntegerKeyword(std::string_view w) {
  return w == "unsigned" || w == "signed" || w == "short" || w == "int" || w == "long" || w == "char";
}

// One spelling per built-in integer type, Aspen's Type names ("unsigned" -> "unsigned int",
// "short int" -> "short", "long long int" -> "long long"), so that V<unsigned> and
// V<unsigned int> name the same vertex, as they name the same C++ type.
std::string canonicalIntegerType(const std::vector<std::string_view> &words) {
  bool isUnsigned = false, isSigned = false, isShort = false, isChar = false;
  int longs = 0;
  for (std::string_view w : words) {
    isUnsigned |= w == "unsigned";
    isSigned |= w == "signed";
    isShort |= w == "short";
    isChar |= w == "char";
    longs += w == "long";
  }
  if (isChar)
    return isUnsigned ? "unsigned char" : isSigned ? "signed char" : "char";
  const std::string prefix = isUnsigned ? "unsigned " : "";
  if (isShort)
    return prefix + "short";
  if (longs >= 2)
    return prefix + "long long";
  if (longs == 1)
    return prefix + "long";
  return prefix + "int";
}

// Rewrites each run of integer keywords in a whitespace-normalised name.
std::string canonicalIntegerTypes(const std::string &name) {
  std::string out;
  std::size_t i = 0;
  while (i < name.size()) {
    if (!isWordChar(name[i]) || (i > 0 && isWordChar(name[i - 1]))) {
      out += name[i++];
      continue;
    }
    std::vector<std::string_view> run;
    std::size_t end = i, next = i;
    while (next < name.size()) {
      std::size_t e = next;
      while (e < name.size() && isWordChar(name[e]))
        ++e;
      const std::string_view word(name.data() + next, e - next);
      if (!isIntegerKeyword(word))
        break;
      run.push_back(word);
      end = e;
      next = (e < name.size() && name[e] == ' ') ? e + 1 : name.size() + 1;
    }
    if (run.empty()) {
      while (i < name.size() && isWordChar(name[i]))
        out += name[i++];
      continue;
    }
    out += canonicalIntegerType(run);
    i = end;
  }
  return out;
}

} // namespace

std::string normalizeVertexName(std::string_view name) {
  std::string out;
  bool pendingSpace = false;
  for (char c : name) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      pendingSpace = !out.empty();
      continue;
    }
    if (pendingSpace && isWordChar(out.back()) && isWordChar(c))
      out += ' ';
    pendingSpace = false;
    out += c;
  }
  if (out.starts_with("::"))
    out.erase(0, 2);
  return canonicalIntegerTypes(out);
}

void CodeletRegistry::add(std::shared_ptr<const CodeletLibrary> lib) {
  for (const auto &known : libs_)
    if (known == lib || known->contentHash() == lib->contentHash())
      return;
  for (const VertexTypeInfo &type : lib->vertexTypes())
    if (auto it = byName_.find(normalizeVertexName(type.name)); it != byName_.end())
      throw codelet_error("vertex type '" + type.name + "' is defined by both '" +
                          it->second->library->sourceName() + "' and '" + lib->sourceName() + "'");
  for (const VertexTypeInfo &type : lib->vertexTypes())
    byName_.emplace(normalizeVertexName(type.name), &type);
  libs_.push_back(std::move(lib));
}

const VertexTypeInfo *CodeletRegistry::find(std::string_view name) const {
  auto it = byName_.find(normalizeVertexName(name));
  return it == byName_.end() ? nullptr : it->second;
}

} // namespace aspen::detail
