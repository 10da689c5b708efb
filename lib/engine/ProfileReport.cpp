#include "ProfileReport.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

namespace aspen::detail {

extern const char kProfilePage[]; // engine/report/ProfilePage.html, embedded at build time

namespace json = support::json;
using json::Value;

namespace {

Value num(std::uint64_t n) { return Value::number(n); }
Value num(double d) { return std::isfinite(d) ? Value::number(d) : Value(); }
Value num(const std::optional<double> &d) { return d ? num(*d) : Value(); }
Value str(std::string s) { return Value::string(std::move(s)); }

Value numbers(const std::vector<std::uint64_t> &values) {
  Value array = Value::array();
  for (std::uint64_t v : values)
    array.push(num(v));
  return array;
}

Value statsOf(const std::vector<std::uint64_t> &bytes, bool withTotal) {
  const TileStats s = tileStats(bytes);
  Value v = Value::object();
  v.set("min", num(s.min));
  v.set("mean", num(s.mean));
  v.set("max", num(s.max));
  v.set("maxTile", num(std::uint64_t(s.maxTile)));
  if (withTotal)
    v.set("total", num(s.total));
  return v;
}

// Bytes the arena holds at each position of program p: the buffers that are always there
// (always-live variables, vertex state, the shared scratch region) and p's reusable variables
// during their live ranges.
std::vector<std::uint64_t> bytesOverPositions(const CompiledGraph &graph, std::uint32_t p,
                                              std::size_t positions) {
  std::uint64_t always = 0, scratch = 0;
  std::vector<std::int64_t> delta(positions + 1, 0);
  for (const Buffer &b : graph.buffers) {
    if (b.kind == BufferKind::Scratch) {
      scratch = std::max(scratch, b.bytes);
    } else if (!b.isReusable()) {
      always += b.bytes;
    } else if (b.liveProgram == p && b.liveBegin <= b.liveEnd && b.liveBegin < positions) {
      delta[b.liveBegin] += std::int64_t(b.bytes);
      delta[std::min<std::uint64_t>(b.liveEnd + 1, positions)] -= std::int64_t(b.bytes);
    }
  }
  std::vector<std::uint64_t> bytes(positions);
  std::int64_t live = 0;
  for (std::size_t i = 0; i < positions; ++i) {
    live += delta[i];
    bytes[i] = always + scratch + std::uint64_t(live);
  }
  return bytes;
}

Value memorySection(const ProfileSources &sources) {
  const CompiledGraph &graph = sources.graph;
  Value m = Value::object();
  m.set("variableBytes", num(graph.variableBytes));
  m.set("tilesUsed", num(std::uint64_t(tileStats(graph.tileBytes).tilesUsed)));
  m.set("perTile", statsOf(graph.tileBytes, true));
  m.set("peakPerTile", statsOf(graph.tilePeakBytes, false));
  m.set("tileBytes", numbers(graph.tileBytes));
  m.set("tilePeakBytes", numbers(graph.tilePeakBytes));
  m.set("arenaBytes", num(graph.arenaBytes));
  m.set("alwaysLiveBytes", num(graph.alwaysLiveBytes));
  m.set("bufferBytes", num(graph.bufferBytes));
  const BufferTotals totals = bufferTotals(graph);
  m.set("vertexStateBytes", num(totals.vertexState));
  m.set("scratchBytes", num(totals.scratch));
  Value buffers = Value::array();
  for (const Buffer *largest : largestBuffers(graph, 10)) {
    const Buffer &b = *largest;
    Value v = Value::object();
    v.set("name", str(b.name));
    v.set("bytes", num(b.bytes));
    v.set("kind", str(bufferKindName(b.kind)));
    v.set("live", str(b.kind == BufferKind::Scratch ? "shared"
                      : b.isReusable()               ? "reused"
                                                     : "always"));
    buffers.push(std::move(v));
  }
  m.set("largestBuffers", std::move(buffers));

  Value liveness = Value::array();
  if (sources.compile) {
    const auto &orders = sources.compile->runOrder;
    for (std::uint32_t p = 0; p < orders.size(); ++p) {
      const auto &positions = orders[p].positions;
      const std::vector<std::uint64_t> bytes = bytesOverPositions(graph, p, positions.size());
      Value steps = Value::array();
      for (std::size_t i = 0; i < positions.size(); ++i) {
        Value s = Value::object();
        s.set("position", num(std::uint64_t(i)));
        s.set("step", str(positions[i]));
        s.set("bytes", num(bytes[i]));
        steps.push(std::move(s));
      }
      Value program = Value::object();
      program.set("program", num(std::uint64_t(p)));
      program.set("truncated", Value::boolean(orders[p].truncated));
      program.set("steps", std::move(steps));
      liveness.push(std::move(program));
    }
  }
  m.set("liveness", std::move(liveness));
  return m;
}

std::optional<double> estimateOf(const CompileReport *compile,
                                 const std::vector<std::optional<double>> CompileReport::*table,
                                 std::size_t i) {
  if (!compile || i >= (compile->*table).size())
    return std::nullopt;
  return (compile->*table)[i];
}

Value entry(const ExecutionProfile::Entry &e) {
  Value v = Value::object();
  v.set("calls", num(e.calls));
  v.set("seconds", num(e.seconds));
  return v;
}

// Adds e's calls and seconds to object v.
void addMeasured(Value &v, const ExecutionProfile::Entry &e) {
  v.set("calls", num(e.calls));
  v.set("seconds", num(e.seconds));
}

const char *eventKindName(ExecutionProfile::Event::Kind kind) {
  using K = ExecutionProfile::Event::Kind;
  switch (kind) {
  case K::Program: return "program";
  case K::ComputeSet: return "computeSet";
  case K::Kernel: return "kernel";
  case K::Copy: return "copy";
  case K::Stream: return "stream";
  case K::DeviceGraph: return "deviceGraph";
  }
  return "program";
}

std::string eventName(const CompiledGraph &graph, const ExecutionProfile::Event &e) {
  using K = ExecutionProfile::Event::Kind;
  switch (e.kind) {
  case K::Program: return "program " + std::to_string(e.index);
  case K::ComputeSet: return graph.computeSets.at(e.index).name;
  case K::Kernel: return graph.kernels.at(e.index).name;
  case K::Copy: return "copy " + std::to_string(e.index);
  case K::Stream: return "stream '" + graph.streams.at(e.index).handle + "'";
  case K::DeviceGraph: return "device graph of step '" + graph.steps.at(e.index).name + "'";
  }
  return "";
}

} // namespace

Value profileReport(const ProfileSources &sources, const std::string &contextJson) {
  const CompiledGraph &graph = sources.graph;
  const ExecutionProfile &profile = sources.profile;
  const CompileReport *compile = sources.compile;
  Value report = Value::object();
  report.set("schema", str("aspen.profile/1"));
  if (!contextJson.empty()) {
    Value context = json::parse(contextJson, "printProfileSummary option aspen.reportContext");
    if (!context.isObject())
      throw invalid_option("printProfileSummary option aspen.reportContext = " + contextJson +
                           ": must be a JSON object");
    report.set("context", std::move(context));
  }

  Value target = Value::object();
  target.set("name", str(graph.target.name));
  target.set("tiles", num(std::uint64_t(graph.target.numTiles)));
  target.set("workersPerTile", num(std::uint64_t(graph.target.numWorkerContexts)));
  target.set("bytesPerTile", num(graph.target.bytesPerTile));
  target.set("clockHz", num(graph.target.clockHz));
  report.set("target", std::move(target));
  report.set("memory", memorySection(sources));

  if (compile) {
    Value c = Value::object();
    c.set("seconds", num(compile->seconds));
    Value passes = Value::array();
    for (const CompileReport::Pass &pass : compile->passes) {
      Value p = Value::object();
      p.set("name", str(pass.name));
      p.set("start", num(pass.start));
      p.set("seconds", num(pass.seconds));
      passes.push(std::move(p));
    }
    c.set("passes", std::move(passes));
    report.set("compile", std::move(c));
  } else {
    report.set("compile", Value());
  }
  if (sources.load) {
    Value l = Value::object();
    l.set("start", num(sources.load->first));
    l.set("seconds", num(sources.load->second));
    report.set("load", std::move(l));
  } else {
    report.set("load", Value());
  }

  std::uint64_t totalVertices = 0;
  std::map<std::string, std::uint64_t> byType;
  Value computeSets = Value::array();
  for (std::size_t i = 0; i < graph.computeSets.size(); ++i) {
    const CompiledComputeSet &cs = graph.computeSets[i];
    totalVertices += cs.vertices.size();
    for (const CompiledVertex &v : cs.vertices)
      ++byType[graph.vertexTypes[v.type].name];
    Value v = Value::object();
    v.set("id", num(std::uint64_t(i)));
    v.set("name", str(cs.name));
    v.set("vertices", num(std::uint64_t(cs.vertices.size())));
    v.set("tiles", num(std::uint64_t(cs.tiles.size())));
    v.set("estimatedCycles", num(cs.estimatedCycles));
    v.set("estimatedSeconds", num(estimateOf(compile, &CompileReport::computeSetSeconds, i)));
    v.set("flops", num(cs.estimatedFlops));
    v.set("verticesWithoutEstimate", num(std::uint64_t(cs.verticesWithoutEstimate)));
    v.set("rearrangedBytes", num(cs.rearrangedBytes));
    addMeasured(v, profile.computeSets[i]);
    computeSets.push(std::move(v));
  }
  Value vertices = Value::object();
  vertices.set("total", num(totalVertices));
  Value types = Value::object();
  for (const auto &[name, count] : byType)
    types.set(name, num(count));
  vertices.set("byType", std::move(types));
  report.set("vertices", std::move(vertices));
  report.set("computeSets", std::move(computeSets));

  Value kernels = Value::array();
  for (std::size_t i = 0; i < graph.kernels.size(); ++i) {
    const CompiledKernel &k = graph.kernels[i];
    Value v = Value::object();
    v.set("id", num(std::uint64_t(i)));
    v.set("kind", str(kernelKindName(k.kind)));
    v.set("name", str(k.name));
    v.set("flops", num(k.flops()));
    v.set("estimatedSeconds", num(estimateOf(compile, &CompileReport::kernelSeconds, i)));
    v.set("rearrangedBytes", num(k.rearrangedBytes));
    addMeasured(v, profile.kernels[i]);
    kernels.push(std::move(v));
  }
  report.set("kernels", std::move(kernels));

  std::uint64_t copyBytes = 0;
  std::optional<double> copySeconds = compile ? std::optional<double>(0.0) : std::nullopt;
  std::vector<ExecutionProfile::Entry> measuredCopies(graph.copies.size());
  for (const ExecutionProfile::Event &e : profile.timeline)
    if (e.kind == ExecutionProfile::Event::Kind::Copy && e.index < measuredCopies.size())
      measuredCopies[e.index].add(e.duration);
  Value plans = Value::array();
  for (std::size_t i = 0; i < graph.copies.size(); ++i) {
    const std::uint64_t bytes = graph.copies[i].src.bytes();
    const std::optional<double> estimate = estimateOf(compile, &CompileReport::copySeconds, i);
    copyBytes += bytes;
    if (copySeconds)
      copySeconds = *copySeconds + estimate.value_or(0);
    Value v = Value::object();
    v.set("id", num(std::uint64_t(i)));
    v.set("bytes", num(bytes));
    v.set("estimatedSeconds", num(estimate));
    v.set("timelineCalls", num(measuredCopies[i].calls));
    v.set("timelineSeconds", num(measuredCopies[i].seconds));
    plans.push(std::move(v));
  }
  Value copies = Value::object();
  copies.set("count", num(std::uint64_t(graph.copies.size())));
  copies.set("bytes", num(copyBytes));
  copies.set("estimatedSeconds", num(copySeconds));
  addMeasured(copies, profile.copies);
  copies.set("copiedBytes", num(profile.copiedBytes));
  copies.set("plans", std::move(plans));
  report.set("copies", std::move(copies));

  std::vector<std::optional<ProgramEstimate>> stepEstimates;
  const std::vector<ProgramEstimate> estimates = estimatePrograms(graph, compile, &stepEstimates);
  Value programs = Value::array();
  for (std::size_t p = 0; p < graph.programs.size(); ++p) {
    Value v = Value::object();
    v.set("index", num(std::uint64_t(p)));
    v.set("estimatedSeconds", num(p < estimates.size() ? estimates[p].seconds : std::nullopt));
    v.set("flops", num(p < estimates.size() ? estimates[p].flops : std::uint64_t(0)));
    v.set("exactEstimate", Value::boolean(p < estimates.size() && estimates[p].exact));
    v.set("runs", num(profile.programs[p].calls));
    v.set("seconds", num(profile.programs[p].seconds));
    programs.push(std::move(v));
  }
  report.set("programs", std::move(programs));

  Value steps = Value::array();
  for (std::size_t i = 0; i < graph.steps.size(); ++i) {
    if (!profile.steps[i].calls)
      continue;
    Value v = Value::object();
    v.set("id", num(std::uint64_t(i)));
    v.set("kind", str(stepKindName(graph.steps[i].kind)));
    v.set("name", str(graph.steps[i].name));
    addMeasured(v, profile.steps[i]);
    const bool estimated = i < stepEstimates.size() && stepEstimates[i];
    v.set("estimatedSeconds", estimated ? num(stepEstimates[i]->seconds) : Value());
    v.set("exactEstimate", Value::boolean(estimated && stepEstimates[i]->exact));
    steps.push(std::move(v));
  }
  report.set("steps", std::move(steps));

  Value execution = Value::object();
  std::uint64_t runs = 0;
  double seconds = 0;
  for (const ExecutionProfile::Entry &p : profile.programs) {
    runs += p.calls;
    seconds += p.seconds;
  }
  execution.set("runs", num(runs));
  execution.set("seconds", num(seconds));
  Value streams = entry(profile.streamTransfers);
  streams.set("bytes", num(profile.streamedBytes));
  execution.set("streamTransfers", std::move(streams));
  execution.set("deviceGraphs", entry(profile.deviceSubtrees));
  execution.set("rearrangedBytes", num(profile.rearrangedBytes));
  report.set("execution", std::move(execution));

  Value timeline = Value::object();
  timeline.set("recordedRuns", num(std::uint64_t(profile.recordedRuns)));
  timeline.set("droppedEvents", num(profile.droppedEvents));
  Value events = Value::array();
  for (const ExecutionProfile::Event &e : profile.timeline) {
    Value v = Value::object();
    v.set("kind", str(eventKindName(e.kind)));
    v.set("id", num(std::uint64_t(e.index)));
    v.set("name", str(eventName(graph, e)));
    v.set("start", num(e.start));
    v.set("duration", num(e.duration));
    events.push(std::move(v));
  }
  timeline.set("events", std::move(events));
  report.set("timeline", std::move(timeline));
  return report;
}

namespace {

// Lanes of the trace (its "threads"), one per kind of work.
struct Lane {
  int tid;
  const char *name;
};
constexpr Lane kCompileLane{1, "compile"}, kLoadLane{2, "load"}, kProgramLane{3, "programs"},
    kComputeLane{4, "compute sets and kernels"}, kCopyLane{5, "copies and streams"},
    kDeviceLane{6, "device graphs"};

Lane laneOf(const std::string &kind) {
  if (kind == "program")
    return kProgramLane;
  if (kind == "computeSet" || kind == "kernel")
    return kComputeLane;
  if (kind == "deviceGraph")
    return kDeviceLane;
  return kCopyLane;
}

double numberAt(const Value &v, const char *key) {
  const Value *member = v.find(key);
  return member && member->isNumber() ? member->asDouble() : 0.0;
}

Value completeEvent(const std::string &name, const std::string &category, const Lane &lane,
                    double start, double seconds, Value args) {
  Value e = Value::object();
  e.set("name", str(name));
  e.set("cat", str(category));
  e.set("ph", str("X"));
  e.set("ts", num(start * 1e6)); // microseconds
  e.set("dur", num(seconds * 1e6));
  e.set("pid", num(std::uint64_t(1)));
  e.set("tid", num(std::uint64_t(lane.tid)));
  e.set("args", std::move(args));
  return e;
}

Value metadataEvent(const char *what, int tid, const std::string &name) {
  Value e = Value::object();
  e.set("name", str(what));
  e.set("ph", str("M"));
  e.set("pid", num(std::uint64_t(1)));
  e.set("tid", num(std::uint64_t(tid)));
  Value args = Value::object();
  args.set("name", str(name));
  e.set("args", std::move(args));
  return e;
}

} // namespace

std::string chromeTrace(const Value &report) {
  Value events = Value::array();
  const std::string targetName = report.find("target")->find("name")->asString();
  events.push(metadataEvent("process_name", 0, "Aspen engine (" + targetName + ")"));
  for (const Lane &lane :
       {kCompileLane, kLoadLane, kProgramLane, kComputeLane, kCopyLane, kDeviceLane}) {
    events.push(metadataEvent("thread_name", lane.tid, lane.name));
    Value order = metadataEvent("thread_sort_index", lane.tid, "");
    order.set("args", Value::object({{"sort_index", num(std::uint64_t(lane.tid))}}));
    events.push(std::move(order));
  }
  if (const Value *compile = report.find("compile"); compile && compile->isObject())
    for (const Value &pass : compile->find("passes")->asArray())
      events.push(completeEvent(pass.find("name")->asString(), "compile", kCompileLane,
                                numberAt(pass, "start"), numberAt(pass, "seconds"),
                                Value::object()));
  if (const Value *load = report.find("load"); load && load->isObject())
    events.push(completeEvent("load", "load", kLoadLane, numberAt(*load, "start"),
                              numberAt(*load, "seconds"), Value::object()));
  for (const Value &e : report.find("timeline")->find("events")->asArray()) {
    const std::string &kind = e.find("kind")->asString();
    Value args = Value::object();
    args.set("kind", str(kind));
    args.set("id", *e.find("id"));
    events.push(completeEvent(e.find("name")->asString(), kind, laneOf(kind),
                              numberAt(e, "start"), numberAt(e, "duration"), std::move(args)));
  }
  Value trace = Value::object();
  trace.set("traceEvents", std::move(events));
  trace.set("displayTimeUnit", str("ms"));
  Value other = Value::object();
  other.set("schema", str("aspen.trace/1"));
  other.set("target", str(targetName));
  other.set("droppedEvents", *report.find("timeline")->find("droppedEvents"));
  trace.set("otherData", std::move(other));
  return trace.write();
}

std::string htmlReport(const Value &report) {
  // The report inside a <script> element: JSON with every '<', '>' and '&' written as a \u
  // escape (they only occur inside strings), so no text in it can close the element, and the
  // line separators that older JavaScript parsers refuse escaped too.
  std::string data;
  for (const char c : report.write()) {
    switch (c) {
    case '<': data += "\\u003c"; break;
    case '>': data += "\\u003e"; break;
    case '&': data += "\\u0026"; break;
    default: data += c;
    }
  }
  for (const auto &[utf8, escaped] : {std::pair<std::string, std::string>{"\xE2\x80\xA8", "\\u2028"},
                                      {"\xE2\x80\xA9", "\\u2029"}})
    for (std::size_t at = data.find(utf8); at != std::string::npos; at = data.find(utf8, at))
      data.replace(at, utf8.size(), escaped);
  std::string page = kProfilePage;
  const std::string placeholder = "\"__ASPEN_REPORT_JSON__\"";
  const std::size_t at = page.find(placeholder);
  if (at == std::string::npos)
    throw internal_error("the embedded profile page has no report placeholder");
  page.replace(at, placeholder.size(), data);
  return page;
}

void writeReportFiles(const Value &report, const std::string &directory) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec)
    throw invalid_option("engine option autoReport.directory = '" + directory +
                         "': cannot create the folder: " + ec.message());
  const std::pair<const char *, std::string> files[] = {
      {"profile.json", report.write()}, {"trace.json", chromeTrace(report)},
      {"report.html", htmlReport(report)}};
  for (const auto &[name, text] : files) {
    const fs::path path = fs::path(directory) / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out)
      throw invalid_option("engine option autoReport.directory = '" + directory +
                           "': cannot write '" + path.string() + "': " + std::strerror(errno));
  }
}

} // namespace aspen::detail
