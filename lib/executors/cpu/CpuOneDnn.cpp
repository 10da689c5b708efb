#include "CpuOneDnn.hpp"

#include "support/ConvTables.hpp"
#include "support/Logging.hpp"

#include <aspen/Error.hpp>

#if ASPEN_HAVE_ONEDNN_HEADERS

#include <oneapi/dnnl/dnnl.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace aspen::detail {

namespace {

// The oneDNN C functions Aspen calls, from libdnnl.so.2 (their types from the header).
#define ASPEN_ONEDNN_FUNCTIONS(X)                                                                 \
  X(dnnl_engine_create)                                                                           \
  X(dnnl_stream_create)                                                                           \
  X(dnnl_stream_wait)                                                                             \
  X(dnnl_stream_destroy)                                                                          \
  X(dnnl_memory_desc_init_by_tag)                                                                 \
  X(dnnl_memory_desc_equal)                                                                       \
  X(dnnl_memory_desc_get_size)                                                                    \
  X(dnnl_memory_create)                                                                           \
  X(dnnl_memory_set_data_handle)                                                                  \
  X(dnnl_memory_destroy)                                                                          \
  X(dnnl_dilated_convolution_forward_desc_init)                                                   \
  X(dnnl_dilated_convolution_backward_data_desc_init)                                             \
  X(dnnl_dilated_convolution_backward_weights_desc_init)                                          \
  X(dnnl_primitive_desc_create)                                                                   \
  X(dnnl_primitive_desc_query_md)                                                                 \
  X(dnnl_primitive_desc_destroy)                                                                  \
  X(dnnl_reorder_primitive_desc_create)                                                           \
  X(dnnl_primitive_create)                                                                        \
  X(dnnl_primitive_execute)                                                                       \
  X(dnnl_primitive_destroy)

struct OneDnn {
#define ASPEN_ONEDNN_MEMBER(name) decltype(&::name) name = nullptr;
  ASPEN_ONEDNN_FUNCTIONS(ASPEN_ONEDNN_MEMBER)
#undef ASPEN_ONEDNN_MEMBER
  dnnl_engine_t engine = nullptr;
};

// libdnnl opened once (null when it is not there or lacks a function).
const OneDnn *oneDnn() {
  static std::once_flag once;
  static OneDnn api;
  static bool loaded = false;
  std::call_once(once, [] {
    void *handle = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      logger().debug("CPU executor: no libdnnl.so.2 ({}); convolutions use im2col + BLAS",
                     dlerror());
      return;
    }
    bool all = true;
#define ASPEN_ONEDNN_LOAD(name)                                                                   \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));                          \
  all &= api.name != nullptr;
    ASPEN_ONEDNN_FUNCTIONS(ASPEN_ONEDNN_LOAD)
#undef ASPEN_ONEDNN_LOAD
    loaded = all && api.dnnl_engine_create(&api.engine, dnnl_cpu, 0) == dnnl_success;
    if (!loaded)
      logger().debug("CPU executor: libdnnl.so.2 lacks a function or its CPU engine; "
                     "convolutions use im2col + BLAS");
  });
  return loaded ? &api : nullptr;
}

void check(dnnl_status_t status, const char *call) {
  if (status != dnnl_success)
    throw runtime_error(std::string("oneDNN: ") + call + " failed with status " +
                        std::to_string(int(status)));
}

// The call's ordinary-convolution form in oneDNN's terms (its dilation counts the holes).
struct Standard {
  dnnl_dims_t stride{}, dilate{}, padLower{}, padUpper{};
};

std::optional<Standard> standardForm(const program::ConvGeometry &g) {
  const std::size_t dims = g.inputField.size();
  const std::optional<ConvStandardForm> form = convStandardForm(g);
  if (dims < 1 || dims > 3 || !form)
    return std::nullopt;
  Standard s;
  for (std::size_t d = 0; d < dims; ++d)
    s.stride[d] = form->stride[d], s.dilate[d] = form->dilation[d] - 1,
    s.padLower[d] = form->padLower[d], s.padUpper[d] = form->padUpper[d];
  return s;
}

dnnl_format_tag_t plainTag(int ndims) {
  switch (ndims) {
  case 3: return dnnl_abc;
  case 4: return dnnl_abcd;
  case 5: return dnnl_abcde;
  default: return dnnl_abcdef;
  }
}

// A 64-byte aligned float buffer.
struct Buffer {
  std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
  void reset(std::size_t bytes) {
    data.reset(static_cast<float *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
    if (!data)
      throw graph_memory_allocation_error("oneDNN convolution: cannot allocate " +
                                          std::to_string(bytes) + " bytes");
  }
};

class Call final : public OneDnnConvolution {
public:
  Call(const OneDnn &api, const CompiledKernel &kernel, const Standard &s)
      : api_(api), kind_(kernel.kind) {
    try {
      build(kernel, s);
    } catch (...) {
      release();
      throw;
    }
  }
  ~Call() override { release(); }

private:
  void build(const CompiledKernel &kernel, const Standard &s) {
    const OneDnn &api = api_;
    const program::ConvGeometry &g = kernel.conv.geometry;
    accumulate_ = kernel.conv.accumulate;
    const int field = int(g.inputField.size()), ndims = field + 2;
    const bool grouped = g.groups > 1;
    dnnl_dims_t src{}, dst{}, weights{};
    src[0] = dst[0] = dnnl_dim_t(g.batch);
    src[1] = dnnl_dim_t(g.groups * g.inChans), dst[1] = dnnl_dim_t(g.groups * g.outChans);
    int w = 0;
    if (grouped)
      weights[w++] = dnnl_dim_t(g.groups);
    weights[w++] = dnnl_dim_t(g.outChans), weights[w++] = dnnl_dim_t(g.inChans);
    for (int d = 0; d < field; ++d) {
      src[2 + d] = dnnl_dim_t(g.inputField[d]), dst[2 + d] = dnnl_dim_t(g.outputField[d]);
      weights[w++] = dnnl_dim_t(g.taps[d]);
    }
    weightsElements_ = g.groups * g.outChans * g.inChans;
    for (std::uint64_t t : g.taps)
      weightsElements_ *= t;
    const auto md = [&](const dnnl_dims_t dims, int n, dnnl_format_tag_t tag) {
      dnnl_memory_desc_t m;
      check(api.dnnl_memory_desc_init_by_tag(&m, n, dims, dnnl_f32, tag), "memory_desc_init");
      return m;
    };
    const int wdims = ndims + (grouped ? 1 : 0);
    const dnnl_memory_desc_t anySrc = md(src, ndims, dnnl_format_tag_any),
                             anyDst = md(dst, ndims, dnnl_format_tag_any),
                             anyW = md(weights, wdims, dnnl_format_tag_any);
    // The forward primitive (and, for the backward calls, the hint they need).
    dnnl_convolution_desc_t forward;
    check(api.dnnl_dilated_convolution_forward_desc_init(
              &forward, dnnl_forward_training, dnnl_convolution_direct, &anySrc, &anyW, nullptr,
              &anyDst, s.stride, s.dilate, s.padLower, s.padUpper),
          "convolution_forward_desc_init");
    check(api.dnnl_primitive_desc_create(&hint_, &forward, nullptr, api.engine, nullptr),
          "primitive_desc_create (forward)");
    dnnl_convolution_desc_t desc = forward;
    dnnl_primitive_desc_t pd = hint_;
    if (kind_ == KernelKind::ConvBackwardData) {
      check(api.dnnl_dilated_convolution_backward_data_desc_init(
                &desc, dnnl_convolution_direct, &anySrc, &anyW, &anyDst, s.stride, s.dilate,
                s.padLower, s.padUpper),
            "convolution_backward_data_desc_init");
    } else if (kind_ == KernelKind::ConvBackwardFilter) {
      check(api.dnnl_dilated_convolution_backward_weights_desc_init(
                &desc, dnnl_convolution_direct, &anySrc, &anyW, nullptr, &anyDst, s.stride,
                s.dilate, s.padLower, s.padUpper),
            "convolution_backward_weights_desc_init");
    }
    if (kind_ != KernelKind::ConvForward) {
      check(api.dnnl_primitive_desc_create(&pd_, &desc, nullptr, api.engine, hint_),
            "primitive_desc_create (backward)");
      pd = pd_;
    }
    check(api.dnnl_primitive_create(&primitive_, pd), "primitive_create");
    check(api.dnnl_stream_create(&stream_, api.engine, dnnl_stream_default_flags),
          "stream_create");
    // The operands in table order, each with its argument and the layout the primitive chose.
    const dnnl_memory_desc_t plainSrc = md(src, ndims, plainTag(ndims)),
                             plainDst = md(dst, ndims, plainTag(ndims)),
                             plainW = md(weights, wdims, plainTag(wdims));
    struct Role {
      int arg;
      dnnl_query_t query;
      const dnnl_memory_desc_t *plain;
      bool output;
    };
    std::vector<Role> roles;
    if (kind_ == KernelKind::ConvForward)
      roles = {{DNNL_ARG_SRC, dnnl_query_src_md, &plainSrc, false},
               {DNNL_ARG_WEIGHTS, dnnl_query_weights_md, &plainW, false},
               {DNNL_ARG_DST, dnnl_query_dst_md, &plainDst, true}};
    else if (kind_ == KernelKind::ConvBackwardData)
      roles = {{DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, &plainDst, false},
               {DNNL_ARG_WEIGHTS, dnnl_query_weights_md, &plainW, false},
               {DNNL_ARG_DIFF_SRC, dnnl_query_diff_src_md, &plainSrc, true}};
    else
      roles = {{DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, &plainDst, false},
               {DNNL_ARG_SRC, dnnl_query_src_md, &plainSrc, false},
               {DNNL_ARG_DIFF_WEIGHTS, dnnl_query_diff_weights_md, &plainW, true}};
    for (const Role &role : roles) {
      Operand op;
      op.arg = role.arg;
      op.output = role.output;
      const dnnl_memory_desc_t *chosen = api.dnnl_primitive_desc_query_md(pd, role.query, 0);
      check(api.dnnl_memory_create(&op.user, role.plain, api.engine, DNNL_MEMORY_NONE),
            "memory_create");
      if (!api.dnnl_memory_desc_equal(chosen, role.plain)) {
        op.buffer.reset(api.dnnl_memory_desc_get_size(chosen));
        check(api.dnnl_memory_create(&op.internal, chosen, api.engine, op.buffer.data.get()),
              "memory_create");
        dnnl_primitive_desc_t rpd;
        const dnnl_memory_desc_t *from = role.output ? chosen : role.plain,
                                 *to = role.output ? role.plain : chosen;
        check(api.dnnl_reorder_primitive_desc_create(&rpd, from, api.engine, to, api.engine,
                                                     nullptr),
              "reorder_primitive_desc_create");
        const dnnl_status_t made = api.dnnl_primitive_create(&op.reorder, rpd);
        api.dnnl_primitive_desc_destroy(rpd);
        check(made, "primitive_create (reorder)");
      }
      operands_.push_back(std::move(op));
    }
    if (kind_ == KernelKind::ConvBackwardFilter)
      deltas_.reset(weightsElements_ * sizeof(float));
  }

  void release() {
    for (Operand &op : operands_) {
      if (op.reorder)
        api_.dnnl_primitive_destroy(op.reorder);
      if (op.internal)
        api_.dnnl_memory_destroy(op.internal);
      if (op.user)
        api_.dnnl_memory_destroy(op.user);
    }
    if (primitive_)
      api_.dnnl_primitive_destroy(primitive_);
    if (pd_)
      api_.dnnl_primitive_desc_destroy(pd_);
    if (hint_)
      api_.dnnl_primitive_desc_destroy(hint_);
    if (stream_)
      api_.dnnl_stream_destroy(stream_);
    operands_.clear();
    hint_ = pd_ = nullptr, primitive_ = nullptr, stream_ = nullptr;
  }

public:
  void run(void *const *operands) override {
    // ConvBackwardFilter's deltas land in a buffer of their own when they are scaled or
    // accumulated (then applied below), else straight in the weights operand.
    float *weights = kind_ == KernelKind::ConvBackwardFilter && (accumulate_ || operands[3])
                         ? static_cast<float *>(operands[2])
                         : nullptr;
    std::vector<dnnl_exec_arg_t> args;
    for (std::size_t i = 0; i < operands_.size(); ++i) {
      Operand &op = operands_[i];
      void *data = op.output && weights ? deltas_.data.get() : operands[i];
      check(api_.dnnl_memory_set_data_handle(op.user, data), "memory_set_data_handle");
      if (op.reorder && !op.output) {
        const dnnl_exec_arg_t reorder[] = {{DNNL_ARG_FROM, op.user}, {DNNL_ARG_TO, op.internal}};
        check(api_.dnnl_primitive_execute(op.reorder, stream_, 2, reorder), "reorder");
      }
      args.push_back({op.arg, op.reorder ? op.internal : op.user});
    }
    check(api_.dnnl_primitive_execute(primitive_, stream_, int(args.size()), args.data()),
          "convolution");
    for (Operand &op : operands_)
      if (op.reorder && op.output) {
        const dnnl_exec_arg_t reorder[] = {{DNNL_ARG_FROM, op.internal}, {DNNL_ARG_TO, op.user}};
        check(api_.dnnl_primitive_execute(op.reorder, stream_, 2, reorder), "reorder");
      }
    check(api_.dnnl_stream_wait(stream_), "stream_wait");
    if (weights) {
      float scale = 1.0f;
      if (operands[3])
        std::memcpy(&scale, operands[3], sizeof scale);
      const float *deltas = deltas_.data.get();
      for (std::uint64_t i = 0; i < weightsElements_; ++i)
        weights[i] = accumulate_ ? weights[i] + scale * deltas[i] : scale * deltas[i];
    }
  }

private:
  struct Operand {
    int arg = 0;
    bool output = false;
    dnnl_memory_t user = nullptr, internal = nullptr;
    dnnl_primitive_t reorder = nullptr;
    Buffer buffer;
  };
  const OneDnn &api_;
  KernelKind kind_;
  bool accumulate_ = false;
  std::uint64_t weightsElements_ = 0;
  dnnl_primitive_desc_t hint_ = nullptr, pd_ = nullptr;
  dnnl_primitive_t primitive_ = nullptr;
  dnnl_stream_t stream_ = nullptr;
  std::vector<Operand> operands_;
  Buffer deltas_;
};

} // namespace

std::unique_ptr<OneDnnConvolution> makeOneDnnConvolution(const CompiledKernel &kernel) {
  const ConvShape &c = kernel.conv;
  if (!kernel.isConv() || c.inputType != FLOAT || c.outputType != FLOAT)
    return nullptr;
  const program::ConvGeometry &g = c.geometry;
  if (g.batch == 0 || g.inChans == 0 || g.outChans == 0)
    return nullptr;
  const std::optional<Standard> standard = standardForm(g);
  const OneDnn *api = standard ? oneDnn() : nullptr;
  if (!api)
    return nullptr;
  try {
    return std::make_unique<Call>(*api, kernel, *standard);
  } catch (const error &e) { // a shape oneDNN refuses: the BLAS path runs it
    logger().debug("CPU executor: {} '{}' runs with im2col + BLAS: {}",
                   kernelKindName(kernel.kind), kernel.name, e.what());
    return nullptr;
  }
}

} // namespace aspen::detail

#else // no oneDNN headers at build time: every convolution call runs CpuConv's BLAS path

namespace aspen::detail {
std::unique_ptr<OneDnnConvolution> makeOneDnnConvolution(const CompiledKernel &) {
  return nullptr;
}
} // namespace aspen::detail

#endif
