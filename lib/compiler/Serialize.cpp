// Executable::serialize / deserialize: a CompiledGraph as a versioned little-endian binary
// stream. Layout: magic "ASPENEXE", format version (u32), the body (the CompiledGraph's members
// as Members<T> in CompiledGraph.hpp lists them, recursively; vectors, strings and maps are a
// u64 count followed by their items), then a 64-bit FNV-1a checksum of the body. Codelet libraries travel as their host shared objects
// (CodeletLibrary::binary()); the checksum is verified before any of them is loaded, so a
// damaged stream is reported, never executed.
#include "CompiledGraph.hpp"
#include "support/ConvTables.hpp"
#include "codelets/ContentHash.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Executable.hpp>
#include <aspen/Error.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <istream>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <type_traits>

namespace aspen {

namespace {

using namespace detail;

constexpr char kMagic[8] = {'A', 'S', 'P', 'E', 'N', 'E', 'X', 'E'};
// 6: kernels; 7: block codelets; 8: CompiledGraph members in declaration order;
// 10: gathers and scatters are Copy steps (CopyPlan::rearranges), compute sets and kernels hold
// none
// 12: co-resident launches (BlockLaunch::coResident)
// 15: Buffer::written
// 18: StreamInfo::broadcast (ReplicatedStreamMode)
// 19: collectives' replica groups and CrossReplicaCopy's map (CollectiveShape), the AllToAll
// and CrossReplicaCopy kernels
// (kExecutableFormatVersion, CompiledGraph.hpp)
constexpr std::uint32_t kFormatVersion = kExecutableFormatVersion;

class Writer {
public:
  explicit Writer(std::ostream &out) : out_(out) {}

  template <class T> std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T>> put(T v) {
    out_.write(reinterpret_cast<const char *>(&v), sizeof v);
  }
  void put(const std::string &s) {
    put<std::uint64_t>(s.size());
    out_.write(s.data(), std::streamsize(s.size()));
  }
  void put(const std::vector<std::uint8_t> &bytes) {
    put<std::uint64_t>(bytes.size());
    out_.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  }
  void put(Type t) { put(t.id()); }
  template <class T> void put(const std::vector<T> &items) {
    put<std::uint64_t>(items.size());
    for (const T &item : items)
      put(item);
  }
  template <class M> void put(const std::map<std::string, M, std::less<>> &map) {
    put<std::uint64_t>(map.size());
    for (const auto &[key, value] : map) {
      put(key);
      put(value);
    }
  }
  // Every structure of CompiledGraph.hpp, member by member as Members<T> lists them.
  template <class T> std::enable_if_t<Members<T>::described> put(const T &v) {
    Members<T>::apply(v, [&](const char *, const auto &member) { put(member); });
  }
  void put(const std::shared_ptr<const CodeletLibrary> &lib) { put(lib->binary()); }

private:
  std::ostream &out_;
};

// One past the largest value of each enumeration a stream holds (a new enumerator must be
// counted here: a stream's enumeration without an entry does not compile).
template <class E> struct EnumLimit;
template <> struct EnumLimit<BufferKind> {
  static constexpr std::uint64_t value = std::uint64_t(BufferKind::Scratch) + 1;
  static constexpr const char *name = "buffer kind";
};
template <> struct EnumLimit<DescTemplate::Base> {
  static constexpr std::uint64_t value = std::uint64_t(DescTemplate::Nested) + 1;
  static constexpr const char *name = "field descriptor base";
};
template <> struct EnumLimit<KernelKind> {
  static constexpr std::uint64_t value = kNumKernelKinds;
  static constexpr const char *name = "kernel kind";
};
template <> struct EnumLimit<TypeId> { // TypeId::Invalid included: an unset type
  static constexpr std::uint64_t value = std::uint64_t(kNumTypes) + 1;
  static constexpr const char *name = "element type code";
};
template <> struct EnumLimit<StepKind> {
  static constexpr std::uint64_t value = kNumStepKinds;
  static constexpr const char *name = "step kind";
};

class Reader {
public:
  Reader(std::istream &in, std::uint64_t size) : in_(in), left_(size) {}

  [[noreturn]] void fail(const std::string &why) {
    throw serialization_error("Executable::deserialize: " + why);
  }
  void raw(void *p, std::size_t n) {
    if (n > left_ || !in_.read(static_cast<char *>(p), std::streamsize(n)))
      fail("the stream ends early (truncated)");
    left_ -= n;
  }

  template <class T> std::enable_if_t<std::is_arithmetic_v<T>> get(T &v) { raw(&v, sizeof v); }
  // A bool's byte must be 0 or 1: any other would be undefined behaviour once loaded.
  void get(bool &v) {
    std::uint8_t byte = 0;
    get(byte);
    if (byte > 1)
      fail("corrupt stream: a boolean byte is " + std::to_string(byte));
    v = byte != 0;
  }
  // An enumeration's value must be one of its enumerators (EnumLimit below).
  template <class E> std::enable_if_t<std::is_enum_v<E>> get(E &v) {
    std::underlying_type_t<E> value{};
    get(value);
    if (static_cast<std::uint64_t>(value) >= EnumLimit<E>::value)
      fail("corrupt stream: " + std::string(EnumLimit<E>::name) + " value " +
           std::to_string(static_cast<std::uint64_t>(value)) + " is out of range");
    v = static_cast<E>(value);
  }
  std::uint64_t count() {
    std::uint64_t n = 0;
    get(n);
    // Every counted item takes at least one byte: a corrupt count must not allocate unbounded
    // memory.
    if (n > left_)
      fail("a length of " + std::to_string(n) + " exceeds the " + std::to_string(left_) +
           " bytes left (corrupt stream)");
    return n;
  }
  void get(std::string &s) {
    s.resize(count());
    raw(s.data(), s.size());
  }
  void get(std::vector<std::uint8_t> &bytes) {
    bytes.resize(count());
    raw(bytes.data(), bytes.size());
  }
  void get(Type &t) {
    TypeId id{};
    get(id);
    t = Type(id);
  }
  template <class T> void get(std::vector<T> &items) {
    const std::uint64_t n = count();
    items.clear();
    for (std::uint64_t i = 0; i < n; ++i)
      get(items.emplace_back());
  }
  template <class M> void get(std::map<std::string, M, std::less<>> &map) {
    const std::uint64_t n = count();
    map.clear();
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string key;
      get(key);
      get(map[key]);
    }
  }
  template <class T> std::enable_if_t<Members<T>::described> get(T &v) {
    Members<T>::apply(v, [&](const char *, auto &member) { get(member); });
  }
  std::uint64_t left() const { return left_; }
  void get(std::shared_ptr<const CodeletLibrary> &lib) {
    std::vector<std::uint8_t> bytes;
    get(bytes);
    lib = CodeletLibrary::loadBinary(bytes);
  }

private:
  std::istream &in_;
  std::uint64_t left_;
};

// offset + size <= limit, computed without wrapping.
bool fitsIn(std::uint64_t offset, std::uint64_t size, std::uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

// a * b, or nothing when it does not fit 64 bits.
std::optional<std::uint64_t> times(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    return std::nullopt;
  return product;
}

// A stream that parses can still be corrupt: check every index and byte range before an
// executor trusts them, in arithmetic that cannot wrap.
// A collective's shape fits its kind and r replicas (CollectiveSteps.cpp's rules): what the
// engine's arithmetic (CollectiveMath.cpp) takes without checking again.
bool isValidCollective(KernelKind kind, const CollectiveShape &c, std::uint32_t r) {
  using collectives::CommGroupType;
  const auto groupType = CommGroupType(c.groupType);
  if (c.op > std::uint32_t(collectives::CollectiveOperator::LOCAL) ||
      c.elements > (std::uint64_t(1) << 48) || !c.type.valid() || c.type == QUARTER ||
      c.type == QUARTER_METADATA || c.groupType > std::uint32_t(CommGroupType::ORTHOGONAL) ||
      c.groupSize == 0 || r % c.groupSize != 0 ||
      (groupType == CommGroupType::ALL && c.groupSize != r) || c.root >= c.groupSize)
    return false;
  if (kind == KernelKind::AllToAll && c.elements % c.groupSize != 0)
    return false;
  if (kind != KernelKind::CrossReplicaCopy)
    return c.sources.empty();
  std::vector<bool> isSource(r, false);
  for (std::uint32_t s : c.sources) {
    if (s >= r || isSource[s])
      return false;
    isSource[s] = true;
  }
  return c.sources.size() == r;
}

void validate(Reader &io, const CompiledGraph &g) {
  auto check = [&](bool ok, const char *what) {
    if (!ok)
      io.fail(std::string("corrupt stream: ") + what + " out of range");
  };
  auto checkRegions = [&](const RegionList &r) {
    for (const ByteRun &run : r.runs) {
      check(run.buffer < g.buffers.size(), "buffer index");
      const Buffer &b = g.buffers[run.buffer];
      if (run.count == 0)
        continue;
      std::int64_t span = 0, last = 0;
      const bool wraps = run.count - 1 > std::uint64_t(INT64_MAX) ||
                         __builtin_mul_overflow(run.stride, std::int64_t(run.count - 1), &span) ||
                         __builtin_add_overflow(run.offset, span, &last);
      check(!wraps && std::min(run.offset, last) >= 0 &&
                fitsIn(std::uint64_t(std::max(run.offset, last)), r.elementBytes, b.bytes),
            "region");
    }
  };
  for (const Buffer &b : g.buffers) {
    check(fitsIn(b.offset, b.bytes, g.arenaBytes), "buffer");
    check(b.alwaysLive || b.liveBegin > b.liveEnd || b.liveProgram < g.programs.size(),
          "buffer live range program");
  }
  for (const InitialValue &v : g.initialValues)
    check(v.buffer < g.buffers.size() && fitsIn(v.offset, v.bytes.size(), g.buffers[v.buffer].bytes),
          "initial value");
  check(g.replicationFactor >= 1, "replication factor");
  for (std::uint32_t b : g.replicationIndexBuffers)
    check(b < g.buffers.size() && g.buffers[b].bytes >= 4, "replication index buffer");
  for (const CompiledVertexType &t : g.vertexTypes)
    check(t.library < g.libraries.size(), "codelet library index");
  for (const CompiledComputeSet &cs : g.computeSets) {
    for (const CompiledVertex &v : cs.vertices)
      check(v.type < g.vertexTypes.size() && v.firstField <= cs.fields.size(), "vertex");
    for (const TileGroup &t : cs.tiles)
      check(t.begin <= t.end && t.end <= cs.vertices.size(), "tile group");
    for (const auto *descs : {&cs.fields, &cs.nested})
      for (const DescTemplate &d : *descs)
        check(d.base != DescTemplate::Nested ? d.buffer < g.buffers.size()
                                             : fitsIn(d.offset, d.size, cs.nested.size()),
              "field descriptor");
  }
  for (const CompiledKernel &k : g.kernels) {
    const ArrayRef<OperandInfo> table = kernelOperands(k.kind);
    check(k.operands.size() == table.size(), "kernel operand count");
    if (k.kind == KernelKind::Block) {
      const BlockLaunch &l = k.launch;
      check(l.computeSet < g.computeSets.size() &&
                g.computeSets[l.computeSet].vertices.size() == 1 && l.blocks >= 1 &&
                l.threadsPerBlock >= 1 && l.threadsPerBlock <= kMaxBlockThreads &&
                l.sharedBytes <= kMaxBlockSharedBytes && k.operands.empty(),
            "block kernel");
      continue;
    }
    // Each operand's elements and element bytes, by kind.
    std::vector<std::uint64_t> elements(table.size()), bytes(table.size());
    switch (k.kind) {
    case KernelKind::Gemm: {
      const GemmShape &s = k.gemm;
      const auto product = [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
        const std::optional<std::uint64_t> ab = times(a, b);
        const std::optional<std::uint64_t> abc = ab ? times(*ab, c) : std::nullopt;
        check(abc.has_value(), "kernel shape");
        return *abc;
      };
      elements[GemmOperand::a] = product(s.G, s.M, s.K);
      elements[GemmOperand::b] = product(s.G, s.K, s.N);
      elements[GemmOperand::c] = product(s.G, s.M, s.N);
      elements[GemmOperand::scale] = 1;
      bytes[GemmOperand::a] = bytes[GemmOperand::b] = s.inputType.size();
      bytes[GemmOperand::c] = s.outputType.size();
      bytes[GemmOperand::scale] = 4;
      break;
    }
    case KernelKind::ConvForward:
    case KernelKind::ConvBackwardData:
    case KernelKind::ConvBackwardFilter: {
      const ConvShape &c = k.conv;
      const program::ConvGeometry &geo = c.geometry;
      check(!convGeometryProblem(geo), "convolution geometry");
      std::uint64_t field = 1, out = 1, taps = 1; // cannot overflow: checked above
      for (std::size_t d = 0; d < geo.inputField.size(); ++d)
        field *= geo.inputField[d], out *= geo.outputField[d], taps *= geo.taps[d];
      const std::uint64_t in = geo.batch * geo.groups * geo.inChans * field,
                          outElements = geo.batch * geo.groups * geo.outChans * out,
                          weights = geo.groups * geo.outChans * geo.inChans * taps;
      const std::uint64_t inBytes = c.inputType.size(), outBytes = c.outputType.size();
      if (k.kind == KernelKind::ConvForward) {
        elements = {in, weights, outElements};
        bytes = {inBytes, inBytes, outBytes};
      } else if (k.kind == KernelKind::ConvBackwardData) {
        elements = {outElements, weights, in};
        bytes = {outBytes, inBytes, inBytes};
      } else {
        elements = {outElements, in, weights, 1};
        bytes = {outBytes, inBytes, inBytes, 4};
      }
      break;
    }
    case KernelKind::AllReduce:
    case KernelKind::ReduceScatter:
    case KernelKind::AllGather:
    case KernelKind::Broadcast:
    case KernelKind::AllToAll:
    case KernelKind::CrossReplicaCopy: {
      const CollectiveShape &c = k.collective;
      check(isValidCollective(k.kind, c, g.replicationFactor), "collective");
      elements = {c.elements, c.resultElements(k.kind)};
      bytes = {c.type.size(), c.type.size()};
      break;
    }
    case KernelKind::Block:
      break;
    }
    for (std::size_t i = 0; i < table.size(); ++i) {
      const DescTemplate &d = k.operands[i];
      const std::optional<std::uint64_t> operandBytes = times(d.size, bytes[i]);
      check(d.base == DescTemplate::Arena
                ? d.size == elements[i] && d.buffer < g.buffers.size() && operandBytes &&
                      fitsIn(d.offset, *operandBytes, g.buffers[d.buffer].bytes)
                : table[i].presence == OperandPresence::Optional && d.base == DescTemplate::Null,
            "kernel operand");
    }
  }
  for (const CopyPlan &p : g.copies)
    checkRegions(p.src), checkRegions(p.dst);
  for (const StreamCopy &c : g.streamCopies)
    check(c.stream < g.streams.size(), "stream index"), checkRegions(c.tensor);
  for (const StreamInfo &s : g.streams)
    check(!s.broadcast || s.hostToDevice, "stream (a BROADCAST stream is host-to-device)");
  for (const PrintInfo &p : g.prints)
    checkRegions(p.regions);
  const auto checkCaches = [&](const std::vector<std::uint32_t> &caches) {
    for (std::uint32_t c : caches)
      check(c < g.caches.size(), "cache index");
  };
  for (const auto *handles : {&g.hostWrites, &g.hostReads})
    for (const auto &[name, h] : *handles)
      checkRegions(h.regions), checkCaches(h.invalidates);
  for (const CachedStep &c : g.caches)
    for (const auto *buffers : {&c.reads, &c.writes})
      for (std::uint32_t b : *buffers)
        check(b < g.buffers.size(), "cache variable");
  for (const Step &s : g.steps) {
    for (std::uint32_t c : s.children)
      check(c < g.steps.size(), "step child");
    const StepKindInfo &info = stepKindInfo(s.kind);
    std::size_t limit = 1;
    switch (info.payload) {
    case StepPayload::None: limit = 1; break;
    case StepPayload::ComputeSet: limit = g.computeSets.size(); break;
    case StepPayload::Copy: limit = g.copies.size(); break;
    case StepPayload::StreamCopy: limit = g.streamCopies.size(); break;
    case StepPayload::Print: limit = g.prints.size(); break;
    case StepPayload::Kernel: limit = g.kernels.size(); break;
    case StepPayload::Cache: limit = g.caches.size(); break;
    }
    check(s.index < limit, "step operand");
    checkCaches(s.invalidates);
    std::size_t children = 0;
    switch (info.children) {
    case StepChildren::None: children = 0; break;
    case StepChildren::Any: children = s.children.size(); break;
    case StepChildren::One: children = 1; break;
    case StepChildren::Two: children = 2; break;
    case StepChildren::CasesPlusOne: children = s.cases.size() + 1; break;
    }
    check(s.children.size() == children, "step children");
    const bool hasScalar = info.readsScalar;
    check(!hasScalar ||
              (s.scalar.buffer < g.buffers.size() &&
               fitsIn(s.scalar.offset, s.scalar.type.size(), g.buffers[s.scalar.buffer].bytes)),
          "predicate");
  }
  for (std::uint32_t p : g.programs)
    check(p < g.steps.size(), "program");
}

} // namespace

namespace detail {

std::uint64_t fingerprint(const CompiledGraph &graph) {
  std::ostringstream body;
  Writer io(body);
  io.put(kFormatVersion);
  io.put(graph);
  return ContentHash().add(std::move(body).str()).value();
}

} // namespace detail

void Executable::serialize(std::ostream &out) const {
  std::ostringstream body;
  Writer io(body);
  io.put(*compiled_);
  const std::string bytes = std::move(body).str();
  const std::uint64_t checksum = ContentHash().add(bytes).value();
  Writer header(out);
  out.write(kMagic, sizeof kMagic);
  header.put(kFormatVersion);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  header.put(checksum);
  if (!out)
    throw serialization_error("Executable::serialize: writing to the stream failed");
}

Executable Executable::deserialize(std::istream &in) {
  const std::string data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::istringstream stream(data);
  Reader header(stream, data.size());
  char magic[sizeof kMagic];
  header.raw(magic, sizeof magic);
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    header.fail("the stream is not an Aspen executable (bad magic header)");
  std::uint32_t version = 0;
  header.get(version);
  if (version != kFormatVersion)
    header.fail("format version " + std::to_string(version) + " is not supported (this build reads " +
                "version " + std::to_string(kFormatVersion) + " only; compile the graph again with " +
                "this build to make an executable it can load)");
  const std::size_t headerBytes = sizeof kMagic + sizeof version;
  if (data.size() < headerBytes + sizeof(std::uint64_t))
    header.fail("the stream ends early (truncated)");
  const std::string_view body(data.data() + headerBytes, data.size() - headerBytes - sizeof(std::uint64_t));
  std::uint64_t checksum = 0;
  std::memcpy(&checksum, data.data() + data.size() - sizeof checksum, sizeof checksum);
  if (ContentHash().add(body).value() != checksum)
    header.fail("the checksum does not match (the stream is damaged or truncated)");

  Reader io(stream, body.size());
  auto graph = std::make_unique<CompiledGraph>();
  io.get(*graph);
  if (io.left() != 0)
    io.fail("corrupt stream: " + std::to_string(io.left()) +
            " bytes follow the executable before the checksum");
  validate(io, *graph);
  return Executable(std::move(graph));
}

} // namespace aspen
