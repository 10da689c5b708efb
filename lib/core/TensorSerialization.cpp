// Graph::serializeTensors and Graph::deserializeTensors: tensors written as Aspen's JSON
// document and read back into a graph as new variables with the same views.
//
// The document: {"format": "aspen.tensors", "version": 1,
//   "variables": [{"name", "type", "shape", "mapping": [[tile, begin, end], ...]}, ...],
//   "tensors": [{"type", "shape", "regions": [[variable, byteOffset, byteStride, count], ...]}]}
// where a tensor's regions are its getStridedVarRegions() with the variable given by its
// position in "variables". Both SerializationFormats write and read this one document: Aspen
// has no other encoding, and it cannot read Poplar's (Cap'n Proto or JSON) tensor files.
#include "GraphState.hpp"
#include "support/Json.hpp"

#include <aspen/Graph.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <iterator>
#include <map>
#include <optional>

namespace aspen {

namespace {

namespace json = support::json;

constexpr const char *kDocumentFormat = "aspen.tensors";
constexpr std::uint64_t kDocumentVersion = 1;

json::Value unsignedValue(std::size_t v) { return json::Value::number(std::uint64_t(v)); }
json::Value signedValue(std::int64_t v) { return json::Value::numberText(std::to_string(v)); }

json::Value shapeValue(const std::vector<std::size_t> &shape) {
  json::Value list = json::Value::array();
  for (std::size_t d : shape)
    list.push(unsignedValue(d));
  return list;
}

// Reading: every malformed part raises serialization_error saying where it is.
[[noreturn]] void malformed(const std::string &where, const std::string &what) {
  throw serialization_error(
      fmt::format("deserializeTensors: {} {} (Aspen reads only the documents that "
                  "Graph::serializeTensors writes, not Poplar's tensor files)",
                  where, what));
}

const json::Value &member(const json::Value &object, const char *key, const std::string &where) {
  if (!object.isObject())
    malformed(where, "is not a JSON object");
  const json::Value *v = object.find(key);
  if (!v)
    malformed(where, fmt::format("has no \"{}\"", key));
  return *v;
}

const json::Value::Array &arrayOf(const json::Value &v, const std::string &where) {
  if (!v.isArray())
    malformed(where, "is not a JSON array");
  return v.asArray();
}

std::size_t unsignedOf(const json::Value &v, const std::string &where) {
  const std::optional<std::uint64_t> n = v.isNumber() ? v.asUnsigned() : std::nullopt;
  if (!n)
    malformed(where, "is not a non-negative integer");
  return static_cast<std::size_t>(*n);
}

std::int64_t signedOf(const json::Value &v, const std::string &where) {
  std::int64_t n = 0;
  if (v.isNumber()) {
    const std::string &text = v.numberText();
    const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (status == std::errc() && end == text.data() + text.size())
      return n;
  }
  malformed(where, "is not an integer");
}

Type typeOf(const json::Value &v, const std::string &where) {
  if (v.isString())
    for (unsigned i = 0; i < kNumTypes; ++i)
      if (Type(static_cast<TypeId>(i)).toString() == v.asString())
        return Type(static_cast<TypeId>(i));
  malformed(where, "is not the name of an element type");
}

std::vector<std::size_t> shapeOf(const json::Value &v, const std::string &where) {
  std::vector<std::size_t> shape;
  for (const json::Value &d : arrayOf(v, where))
    shape.push_back(unsignedOf(d, where + " dimension"));
  return shape;
}

// `count` elements of `base` (1-D), the first at `first`, then every `step` (0: the same one;
// negative: backwards).
Tensor stridedElements(const Tensor &base, std::int64_t first, std::int64_t step,
                       std::size_t count, const std::string &where) {
  const auto n = static_cast<std::int64_t>(base.numElements());
  const std::int64_t last = first + step * static_cast<std::int64_t>(count - 1);
  if (first < 0 || first >= n || last < 0 || last >= n)
    malformed(where, fmt::format("reaches outside its variable's {} elements", n));
  const auto at = [](std::int64_t i) { return static_cast<std::size_t>(i); };
  if (count == 1 || step == 0)
    return base.slice(at(first), at(first) + 1).broadcast(static_cast<unsigned>(count), 0);
  if (step > 0)
    return base.slice(at(first), at(last) + 1).subSample(static_cast<unsigned>(step), 0);
  return base.slice(at(last), at(first) + 1).reverse(0).subSample(static_cast<unsigned>(-step), 0);
}

} // namespace

void Graph::serializeTensors(std::ostream &out, ArrayRef<Tensor> tensors,
                             SerializationFormat) const {
  json::Value variables = json::Value::array();
  json::Value list = json::Value::array();
  std::map<unsigned, std::size_t> position; // variable id -> index in "variables"
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor &t = tensors[i];
    if (!t.valid())
      throw serialization_error(
          fmt::format("serializeTensors: tensor {} is invalid (default-constructed)", i));
    state_->requireOwnTensor(t, "serializeTensors");
    if (t.containsConstant())
      throw serialization_error(fmt::format(
          "serializeTensors: tensor {} ({}) contains constants; only elements of variables "
          "can be serialised",
          i, t.getDebugStr()));
    json::Value regions = json::Value::array();
    for (const StridedVarRegion &r : t.getStridedVarRegions()) {
      const auto [it, added] = position.emplace(r.var.id, variables.asArray().size());
      if (added) {
        const Tensor var = getVariable(r.var);
        json::Value mapping = json::Value::array();
        const TileToTensorMapping tiles = getTileMapping(var, false);
        for (std::size_t tile = 0; tile < tiles.size(); ++tile)
          for (const Interval &interval : tiles[tile])
            mapping.push(json::Value::array({unsignedValue(tile), unsignedValue(interval.begin()),
                                             unsignedValue(interval.end())}));
        json::Value entry = json::Value::object();
        entry.set("name", json::Value::string(state_->variables[r.var.id].name));
        entry.set("type", json::Value::string(var.elementType().toString()));
        entry.set("shape", shapeValue(var.shape()));
        entry.set("mapping", std::move(mapping));
        variables.push(std::move(entry));
      }
      regions.push(json::Value::array({unsignedValue(it->second), signedValue(r.byteOffset),
                                       signedValue(r.byteStride), unsignedValue(r.count)}));
    }
    json::Value entry = json::Value::object();
    entry.set("type", json::Value::string(t.elementType().toString()));
    entry.set("shape", shapeValue(t.shape()));
    entry.set("regions", std::move(regions));
    list.push(std::move(entry));
  }
  json::Value root = json::Value::object();
  root.set("format", json::Value::string(kDocumentFormat));
  root.set("version", unsignedValue(kDocumentVersion));
  root.set("variables", std::move(variables));
  root.set("tensors", std::move(list));
  out << root.write() << '\n';
  if (!out)
    throw serialization_error("serializeTensors: writing the stream failed");
}

std::vector<Tensor> Graph::deserializeTensors(std::istream &in, SerializationFormat) {
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  json::Value root;
  try {
    root = json::parse(text, "the tensor stream");
  } catch (const invalid_option &e) {
    malformed("the stream", fmt::format("is not Aspen's JSON tensor document ({})", e.what()));
  }
  const json::Value &format = member(root, "format", "the document");
  if (!format.isString() || format.asString() != kDocumentFormat)
    malformed("the document", fmt::format("is not an \"{}\" document", kDocumentFormat));
  if (unsignedOf(member(root, "version", "the document"), "its version") != kDocumentVersion)
    malformed("the document", fmt::format("is not of version {}", kDocumentVersion));

  // The variables and the form of every region are checked before anything is created; a
  // region that reaches outside its variable is found when the views are built.
  struct VariableSpec {
    std::string name;
    Type type;
    std::vector<std::size_t> shape;
    TileToTensorMapping mapping;
  };
  std::vector<VariableSpec> specs;
  const auto &variables = arrayOf(member(root, "variables", "the document"), "its variables");
  for (std::size_t i = 0; i < variables.size(); ++i) {
    const std::string where = fmt::format("variable {}", i);
    VariableSpec spec;
    const json::Value &name = member(variables[i], "name", where);
    if (!name.isString())
      malformed(where + " name", "is not a string");
    spec.name = name.asString();
    spec.type = typeOf(member(variables[i], "type", where), where + " type");
    spec.shape = shapeOf(member(variables[i], "shape", where), where + " shape");
    for (const json::Value &run : arrayOf(member(variables[i], "mapping", where), where)) {
      const auto &fields = arrayOf(run, where + " mapping");
      if (fields.size() != 3)
        malformed(where + " mapping", "has a run that is not [tile, begin, end]");
      const std::size_t tile = unsignedOf(fields[0], where + " tile");
      if (tile >= getTarget().getNumTiles())
        throw invalid_tile_mapping(fmt::format(
            "deserializeTensors: variable {} ('{}') is mapped to tile {}; this graph has {} tiles",
            i, spec.name, tile, getTarget().getNumTiles()));
      if (spec.mapping.size() <= tile)
        spec.mapping.resize(tile + 1);
      spec.mapping[tile].emplace_back(unsignedOf(fields[1], where + " begin"),
                                      unsignedOf(fields[2], where + " end"));
    }
    specs.push_back(std::move(spec));
  }
  const auto &tensorList = arrayOf(member(root, "tensors", "the document"), "its tensors");
  for (std::size_t i = 0; i < tensorList.size(); ++i)
    for (const json::Value &r :
         arrayOf(member(tensorList[i], "regions", fmt::format("tensor {}", i)), "regions")) {
      const auto &fields = arrayOf(r, fmt::format("tensor {} region", i));
      if (fields.size() != 4 ||
          unsignedOf(fields[0], fmt::format("tensor {} region variable", i)) >= specs.size())
        malformed(fmt::format("tensor {} region", i),
                  fmt::format("is not [variable, byteOffset, byteStride, count] with a variable "
                              "below {}",
                              specs.size()));
    }

  std::vector<Tensor> vars;
  for (const VariableSpec &spec : specs) {
    Tensor var = addVariable(spec.type, spec.shape, spec.name);
    setTileMapping(var, spec.mapping);
    vars.push_back(var);
  }
  std::vector<Tensor> result;
  for (std::size_t i = 0; i < tensorList.size(); ++i) {
    const std::string where = fmt::format("tensor {}", i);
    const Type type = typeOf(member(tensorList[i], "type", where), where + " type");
    const std::vector<std::size_t> shape =
        shapeOf(member(tensorList[i], "shape", where), where + " shape");
    std::vector<Tensor> pieces;
    for (const json::Value &r : member(tensorList[i], "regions", where).asArray()) {
      const auto &f = r.asArray();
      const Tensor &var = vars[unsignedOf(f[0], where)];
      const std::int64_t offset = signedOf(f[1], where + " byteOffset");
      const std::int64_t stride = signedOf(f[2], where + " byteStride");
      const std::size_t count = unsignedOf(f[3], where + " count");
      const auto size = static_cast<std::int64_t>(type.size());
      const std::size_t varBytes = var.numElements() * var.elementType().size();
      if (count == 0 || offset % size != 0 || stride % size != 0 ||
          varBytes % type.size() != 0)
        malformed(where + " region",
                  fmt::format("does not describe whole {} elements", type.toString()));
      Tensor base = var.flatten();
      if (type != var.elementType())
        base = base.reinterpret(type);
      pieces.push_back(
          stridedElements(base, offset / size, stride / size, count, where + " region"));
    }
    const std::size_t elements = Graph::shapeElements(shape);
    std::size_t regionElements = 0;
    for (const Tensor &piece : pieces)
      regionElements += piece.numElements();
    if (regionElements != elements)
      malformed(where, fmt::format("has regions of {} elements for shape {{{}}}", regionElements,
                                   fmt::join(shape, ",")));
    // A tensor without elements has no regions: an empty variable of its type stands for it.
    result.push_back(pieces.empty() ? addVariable(type, shape, where)
                                    : concat(pieces).reshape(shape));
  }
  return result;
}

} // namespace aspen
