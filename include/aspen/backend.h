/* aspen/backend.h: Aspen's layers for framework backends, behind a C ABI.
 *
 * A framework backend does not build graphs: it calls "LSTM forward on these buffers" thousands
 * of times. Each call here takes buffers the caller owns; the first call of a layer
 * configuration (kind, sizes, type, options, device) compiles an engine for it, and every later
 * call with the same configuration reuses it: a cache hit compiles nothing and copies only what
 * the engine's memory layout needs. Several threads may call at once; concurrent first calls of
 * one configuration compile it once. The cache keeps at most `max_layers` engines and evicts the
 * least recently used.
 *
 * Errors come back as an aspen_status; aspen_last_error() is the message of the last failed
 * call on the calling thread (names the argument or option and the rule). Nothing is thrown
 * across this ABI, and arguments are checked before anything runs.
 *
 * Devices: "cpu" (the CPU executor, the layer spread over one tile per thread of its pool:
 * ASPEN_CPU_THREADS, else the CPUs the process may run on), "cpu:N" (N tiles, 1 to 4096), "gpu" / "gpu:N" (CUDA
 * device N; a build with CUDA) and model targets ("h200", "h100", "ipu2", "ipu21", "ipu1": the
 * CPU executor modelling them, as planned for that target). The CPU executor's products call
 * OpenBLAS on each tile's thread: OPENBLAS_NUM_THREADS=1 avoids two levels of threads
 * competing for the cores (docs/backend.md).
 *
 * Buffers: host memory on the CPU and model devices (and `stream` must be NULL); device memory
 * (cudaMalloc'd or managed) on a GPU device, with `stream` the cudaStream_t the caller ordered
 * their work on (NULL: the legacy default stream). A call on a GPU device waits for the work
 * queued on `stream` before it reads its inputs and returns when its results are in the
 * caller's buffers. Buffers in the other kind of memory are refused
 * (ASPEN_ERROR_INVALID_ARGUMENT). `lengths` are host memory on every device.
 *
 * Layouts (row-major, element type `dtype`: float32, or float16 as IEEE binary16 bits):
 *   x [T,B,I] (time-major), y [T,B,H], h0/hn/c0/cn [B,H], lengths [B] (uint32, 0..T);
 *   weights and biases: Aspen's (input_weights [G,I,H], x.W, slot g = the g-th gate of
 *   cell_order) or PyTorch's, as desc->weights_layout says (aspen_weights_layout);
 *   G = 4 (LSTM) or 3 (GRU).
 *
 * C99 and C++ (any standard from C++11) include this header.
 */
#ifndef ASPEN_BACKEND_H
#define ASPEN_BACKEND_H

#include <aspen/Export.hpp>

#include <stddef.h>
#include <string.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aspen_status {
  ASPEN_OK = 0,
  ASPEN_ERROR_INVALID_ARGUMENT = 1, /* a null buffer, a zero or inconsistent size, bad lengths */
  ASPEN_ERROR_INVALID_OPTION = 2,   /* an option key or value the layer refuses */
  ASPEN_ERROR_UNSUPPORTED = 3,      /* valid, but not something Aspen does (yet) */
  ASPEN_ERROR_OUT_OF_MEMORY = 4,    /* host memory, or the target's tile memory */
  ASPEN_ERROR_RUNTIME = 5,          /* the device failed while running the layer */
  ASPEN_ERROR_INTERNAL = 6          /* a bug in Aspen: please report the message */
} aspen_status;

/* ASPEN_DTYPE_FLOAT64 names what a framework may hold; every call refuses it
 * (ASPEN_ERROR_UNSUPPORTED): Aspen has no double path. */
typedef enum aspen_dtype {
  ASPEN_DTYPE_FLOAT32 = 0,
  ASPEN_DTYPE_FLOAT16 = 1,
  ASPEN_DTYPE_FLOAT64 = 2
} aspen_dtype;

typedef struct aspen_backend aspen_backend;

/* The message of the last call on this thread that failed ("" when none has). */
ASPEN_API const char *aspen_last_error(void);
/* "ASPEN_OK", "ASPEN_ERROR_INVALID_ARGUMENT", ... */
ASPEN_API const char *aspen_status_string(aspen_status status);

/* A backend for `device` keeping at most `max_layers` compiled layers (0: 64). */
ASPEN_API aspen_status aspen_backend_create(const char *device, size_t max_layers,
                                            aspen_backend **backend);
/* Frees the backend and its engines; NULL is ignored. No call may be in progress on it. */
ASPEN_API void aspen_backend_destroy(aspen_backend *backend);

typedef struct aspen_cache_stats {
  uint64_t hits;             /* calls that found their layer compiled (or being compiled) */
  uint64_t misses;           /* calls that compiled their layer */
  uint64_t compiles;         /* engines compiled successfully */
  uint64_t compile_failures; /* compiles that raised an error (not cached) */
  uint64_t evictions;        /* engines dropped to stay within the capacity */
  uint64_t entries;          /* engines held now */
  uint64_t capacity;         /* max_layers */
  double compile_seconds;    /* time spent compiling, all threads together */
} aspen_cache_stats;
ASPEN_API aspen_status aspen_backend_cache_stats(aspen_backend *backend, aspen_cache_stats *stats);
/* Drops every cached engine (calls in progress keep theirs until they return). */
ASPEN_API aspen_status aspen_backend_clear_cache(aspen_backend *backend);

/* A parallel loop of the framework that embeds Aspen: calls task(task_context, i) once for every
 * i in [0, n), on any threads and in any order, and returns when every call has returned. */
typedef void (*aspen_parallel_for_fn)(void *context, size_t n,
                                      void (*task)(void *task_context, size_t i),
                                      void *task_context);
/* From the next call on, the CPU work of the backend's calls (a layer's tiles, products,
 * convolutions, large copies) runs through parallel_for(context, ...) instead of each engine's
 * own threads; NULL restores those. A framework whose threads busy-wait between its operations
 * (PyTorch's OpenMP team) passes its own loop, so that its threads and Aspen's do not compete
 * for the cores (aspen_torch does: torch.get_num_threads() threads run Aspen's work too).
 * parallel_for is called from the thread that makes the call, and `task` does not throw or
 * longjmp. Results do not depend on the threads. A GPU backend's kernels are unaffected.
 * Not concurrently with other calls on this backend. */
ASPEN_API aspen_status aspen_backend_set_parallel_for(aspen_backend *backend,
                                                      aspen_parallel_for_fn parallel_for,
                                                      void *context);

/* --- Recurrent layers ------------------------------------------------------------------ */

/* ASPEN_RNN_TANH and ASPEN_RNN_RELU are the vanilla RNN (cuDNN's CUDNN_RNN_TANH / _RELU, PyTorch's
 * torch.nn.RNN): y_t = act(x_t . Wff + y_{t-1} . Wfb + b), one gate (G = 1), no cell state
 * (c0, cn and their gradients NULL), no cell_order, gru_reset_after 0; its options are
 * partialsType and, for a single layer, direction. */
typedef enum aspen_rnn_cell {
  ASPEN_RNN_LSTM = 0,
  ASPEN_RNN_GRU = 1,
  ASPEN_RNN_TANH = 2,
  ASPEN_RNN_RELU = 3
} aspen_rnn_cell;

/* How the weights, biases and their gradients are laid out (both for G gates, in cell_order):
 *   ASPEN_WEIGHTS_ASPEN: Aspen's (x.W): input_weights [G,I,H], output_weights [G,H,H], biases
 *     [G,H] (a GRU with gru_reset_after: [G,2,H], [g][0] input bias, [g][1] recurrent).
 *   ASPEN_WEIGHTS_PYTORCH: PyTorch's and cuDNN's (W.x, rows gate-major): input_weights [G*H,I]
 *     (weight_ih_l0), output_weights [G*H,H] (weight_hh_l0), biases [2,G*H] (bias_ih_l0 then
 *     bias_hh_l0). The two biases are added where the cell adds them (both, except a
 *     reset-after GRU's candidate), so d_biases has both rows equal there. The backend converts
 *     on the host while writing the layer's inputs (and back for the gradients).
 * An LSTM with a projection (desc->options {"projSize": P}, 0 < P < H: h_t = m_t . Wp is P
 * wide, PyTorch's proj_size) has h0, hn, dhn, dh0 [B,P] and y, dy [T,B,P] (c0, cn and their
 * gradients stay [B,H]), and its output_weights (and d_output_weights) hold two matrices one
 * after the other: Aspen's [G,P,H] then Wp [H,P]; PyTorch's weight_hh_l0 [G*H,P] then
 * weight_hr_l0 [P,H]. */
typedef enum aspen_weights_layout {
  ASPEN_WEIGHTS_ASPEN = 0,
  ASPEN_WEIGHTS_PYTORCH = 1
} aspen_weights_layout;

typedef struct aspen_rnn_desc {
  aspen_rnn_cell cell;
  aspen_dtype dtype;
  size_t seq_len;          /* T, the longest sequence */
  size_t batch;            /* B */
  size_t input_size;       /* I */
  size_t hidden_size;      /* H */
  int variable_lengths;    /* nonzero: every call passes lengths[B]; 0: all rows run T steps */
  int gru_reset_after;     /* GRU: the reset gate after the recurrent product (PyTorch, cuDNN) */
  const char *cell_order;  /* NULL: Aspen's default; else e.g. "input,forget,cell,output" */
  const char *options;     /* NULL, or a JSON object of the layer's options (popnn's keys) */
  aspen_weights_layout weights_layout; /* 0 (zero-initialised): Aspen's */
} aspen_rnn_desc;

/* Bytes of the reserve a training forward fills for the backward. */
ASPEN_API aspen_status aspen_rnn_reserve_bytes(aspen_backend *backend, const aspen_rnn_desc *desc,
                                               size_t *bytes);

/* The forward pass. With reserve NULL it is inference (the layer compiled with inferenceOnly);
 * otherwise training, and reserve (aspen_rnn_reserve_bytes) receives what the backward needs.
 * c0 and cn: LSTM only (NULL for a GRU). lengths: with desc->variable_lengths, else NULL.
 * y [T,B,H] is zero past each row's length; hn (and cn) hold each row's state after its last
 * step (the initial state for a length of 0). With desc->options {"direction": "reverse"} each
 * row runs from its own last step back to step 0 (docs/recurrent.md): y stays in the caller's
 * order, and hn (and cn) are the state after step 0; a bidirectional layer is one call of each
 * direction. */
ASPEN_API aspen_status aspen_rnn_forward(aspen_backend *backend, const aspen_rnn_desc *desc,
                                         const void *x, const void *h0, const void *c0,
                                         const void *input_weights, const void *output_weights,
                                         const void *biases, const uint32_t *lengths, void *y,
                                         void *hn, void *cn, void *reserve, void *stream);

/* The backward pass of a training forward called with the same inputs, which returned y and
 * filled reserve. Incoming gradients dy [T,B,H], dhn, dcn [B,H] (each NULL: zero). Results:
 * dx (NULL: not computed), dh0 and dc0 (LSTM), and, when d_input_weights, d_output_weights and
 * d_biases are all given, the weight gradients (written, not accumulated); all three NULL skips
 * the weight update. */
ASPEN_API aspen_status aspen_rnn_backward(
    aspen_backend *backend, const aspen_rnn_desc *desc, const void *x, const void *h0,
    const void *c0, const void *input_weights, const void *output_weights, const void *biases,
    const uint32_t *lengths, const void *y, const void *reserve, const void *dy, const void *dhn,
    const void *dcn, void *dx, void *dh0, void *dc0, void *d_input_weights,
    void *d_output_weights, void *d_biases, void *stream);

/* --- Stacks of recurrent layers, in one or both directions ------------------------------ */

typedef enum aspen_rnn_direction {
  ASPEN_RNN_FORWARD = 0,
  ASPEN_RNN_REVERSE = 1,      /* each row from its own last step back to step 0 */
  ASPEN_RNN_BIDIRECTIONAL = 2 /* both; outputs concatenated per step, forward first */
} aspen_rnn_direction;

/* A stack of num_layers layers, each in `direction` (D = 2 directions for bidirectional, else 1):
 * layer 0 takes x [T,B,I], layer l > 0 the output of layer l - 1 [T,B,D*H], and y [T,B,D*H] is
 * the last layer's output, each step's directions concatenated (PyTorch's and cuDNN's layout).
 * With a projection (layer.options {"projSize": P}, every layer's) read P for H in the widths
 * of x for l > 0, y, h0, hn and their gradients; c0, cn and theirs stay [.., B, H].
 * `layer` describes layer 0 (cell, dtype, T, B, I, H, lengths, cell order, options, weights
 * layout); its options must not set "direction".
 * struct_size is sizeof(aspen_rnn_stack_desc) as the caller was compiled
 * (aspen_rnn_stack_desc_init() sets it): the backend reads the fields that lie within it and
 * takes the others as zero, so a caller built against an older header keeps working when
 * fields are added at the end. num_layers 0 reads as 1. */
typedef struct aspen_rnn_stack_desc {
  size_t struct_size;
  aspen_rnn_desc layer;
  size_t num_layers;
  aspen_rnn_direction direction;
  /* Dropout between layers, in a training forward (reserve given) only: each element of layer
   * l's output, l < num_layers - 1, is zeroed with probability `dropout` and the others scaled
   * by 1 / (1 - dropout) before layer l + 1 takes it, as torch.nn's dropout between layers; the
   * backward applies the same mask. The mask is a function of dropout_seed, l and the element's
   * index in [T,B,D*H] (docs/backend.md gives it): the same on every device, thread count and
   * run. In [0, 1); 0: none. */
  double dropout;
  uint64_t dropout_seed;
} aspen_rnn_stack_desc;

/* A descriptor with every field zero and struct_size set: where a caller starts. */
static inline aspen_rnn_stack_desc aspen_rnn_stack_desc_init(void) {
  aspen_rnn_stack_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  return desc;
}

/* The bytes of the workspace every stack call takes (0 in this version: a stack runs as one
 * engine, its layers' outputs staying in it; kept so that a later version may ask for scratch)
 * and of the reserve a training forward fills for the backward. */
ASPEN_API aspen_status aspen_rnn_stack_sizes(aspen_backend *backend,
                                             const aspen_rnn_stack_desc *desc,
                                             size_t *workspace_bytes, size_t *reserve_bytes);

/* The forward pass of the stack: aspen_rnn_forward's rules layer by layer. h0, c0, hn, cn are
 * [num_layers * D, B, H], entry l * D + d for layer l's direction d (0 forward, 1 reverse; a
 * reverse stack's only direction is d = 0), as PyTorch lays them out. input_weights,
 * output_weights and biases are arrays of num_layers * D pointers in the same order, each in
 * desc->layer.weights_layout, layer l's input size I for l = 0 and D*H after. reserve NULL:
 * inference; else training. workspace: aspen_rnn_stack_sizes' bytes (NULL when that is 0). */
ASPEN_API aspen_status aspen_rnn_stack_forward(
    aspen_backend *backend, const aspen_rnn_stack_desc *desc, const void *x, const void *h0,
    const void *c0, const void *const *input_weights, const void *const *output_weights,
    const void *const *biases, const uint32_t *lengths, void *y, void *hn, void *cn,
    void *workspace, void *reserve, void *stream);

/* The backward pass of a training forward called with the same inputs: dy [T,B,D*H], dhn and
 * dcn [num_layers * D, B, H] (each NULL: zero); dx (NULL: not computed), dh0, dc0; the weight
 * gradients, arrays as the weights' (all three NULL: no weight update), written. */
ASPEN_API aspen_status aspen_rnn_stack_backward(
    aspen_backend *backend, const aspen_rnn_stack_desc *desc, const void *x, const void *h0,
    const void *c0, const void *const *input_weights, const void *const *output_weights,
    const void *const *biases, const uint32_t *lengths, const void *y, void *workspace,
    const void *reserve, const void *dy, const void *dhn, const void *dcn, void *dx, void *dh0,
    void *dc0, void *const *d_input_weights, void *const *d_output_weights,
    void *const *d_biases, void *stream);

/* --- Matrix product and non-linearities ------------------------------------------------ */

/* c [M,N] = a [M,K] . b [K,N], with Aspen's matmul planner. */
ASPEN_API aspen_status aspen_matmul(aspen_backend *backend, aspen_dtype dtype, size_t m, size_t k,
                                    size_t n, const void *a, const void *b, void *c, void *stream);

typedef enum aspen_nonlinearity {
  ASPEN_NONLINEARITY_SIGMOID = 0,
  ASPEN_NONLINEARITY_HARD_SIGMOID = 1,
  ASPEN_NONLINEARITY_RELU = 2,
  ASPEN_NONLINEARITY_TANH = 3,
  ASPEN_NONLINEARITY_GELU = 4,
  ASPEN_NONLINEARITY_GELU_ERF = 5,
  ASPEN_NONLINEARITY_SWISH = 6,
  ASPEN_NONLINEARITY_SOFTMAX = 7 /* over the innermost dimension of [rows, n / rows] */
} aspen_nonlinearity;

/* out [rows, n / rows] = f(in) (in and out may be the same buffer). rows must divide n. */
ASPEN_API aspen_status aspen_nonlinearity_forward(aspen_backend *backend, aspen_nonlinearity kind,
                                                  aspen_dtype dtype, size_t rows, size_t n,
                                                  const void *in, void *out, void *stream);

/* out = dL/dx from the forward's activations and dy = dL/dy ([rows, n / rows]):
 *   RELU: from its input x or its output y (act_is_input says which; the same for relu);
 *   SIGMOID, TANH, SOFTMAX (over each row): from the output y (act_is_input must be 0).
 * Other kinds give ASPEN_ERROR_UNSUPPORTED. act, dy and dx may not overlap except dx == dy. */
ASPEN_API aspen_status aspen_nonlinearity_backward(aspen_backend *backend,
                                                   aspen_nonlinearity kind, aspen_dtype dtype,
                                                   size_t rows, size_t n, const void *act,
                                                   int act_is_input, const void *dy, void *dx,
                                                   void *stream);

/* --- Convolution, pooling and batch normalisation (NCHW) --------------------------------
 *
 * The calls a cuDNN-based backend makes, on caller-owned buffers, compiled once per
 * configuration and cached like the recurrent layers. Layouts are row-major NCHW:
 *   x [N, C, H, W], y [N, K, P, Q], conv weights [K, C / groups, R, S], bias [K],
 *   batch-norm parameters and statistics [C].
 * Each descriptor's `options` is NULL or a JSON object:
 *   "memoryLimitBytes": a bound on one engine's memory (inputs, outputs and scratch); a call
 *     whose batch does not fit runs in slices of fewer images, one after another (weight and
 *     bias gradients summed over them), rather than fail. 0 or absent: no bound.
 *   convolutions also take aspen::linalg's convolution options ("availableMemoryProportion",
 *   "partialsType", "planConstraints", "allowTF32").
 * float64 is refused (ASPEN_ERROR_UNSUPPORTED): Aspen has no double path. */

typedef struct aspen_conv2d_desc {
  aspen_dtype dtype;
  size_t batch, in_channels, height, width; /* N, C, H, W */
  size_t out_channels;                      /* K */
  size_t kernel_h, kernel_w;                /* R, S */
  size_t pad_h, pad_w;                      /* zeros on both sides */
  size_t stride_h, stride_w;                /* 0 means 1 */
  size_t dilation_h, dilation_w;            /* 0 means 1 */
  size_t groups;                            /* 0 means 1; divides C and K */
  const char *options;
} aspen_conv2d_desc;

/* P and Q: (H + 2 pad - dilation (R - 1) - 1) / stride + 1, and likewise for W. */
ASPEN_API aspen_status aspen_conv2d_output_shape(const aspen_conv2d_desc *desc, size_t *p,
                                                 size_t *q);
/* y = conv(x, w) (+ bias a channel when bias is not NULL). */
ASPEN_API aspen_status aspen_conv2d_forward(aspen_backend *backend, const aspen_conv2d_desc *desc,
                                            const void *x, const void *w, const void *bias,
                                            void *y, void *stream);
/* dx = the gradient of conv(x, w) with respect to x, given dy. */
ASPEN_API aspen_status aspen_conv2d_backward_data(aspen_backend *backend,
                                                  const aspen_conv2d_desc *desc, const void *w,
                                                  const void *dy, void *dx, void *stream);
/* dw (written, not accumulated) and, when dbias is not NULL, dbias = sum of dy a channel. */
ASPEN_API aspen_status aspen_conv2d_backward_filter(aspen_backend *backend,
                                                    const aspen_conv2d_desc *desc, const void *x,
                                                    const void *dy, void *dw, void *dbias,
                                                    void *stream);

typedef enum aspen_pool_mode { ASPEN_POOL_MAX = 0, ASPEN_POOL_AVG = 1 } aspen_pool_mode;

typedef struct aspen_pool2d_desc {
  aspen_dtype dtype;
  aspen_pool_mode mode;
  size_t batch, channels, height, width; /* N, C, H, W */
  size_t kernel_h, kernel_w;
  size_t pad_h, pad_w;       /* at most half the kernel, as PyTorch requires */
  size_t stride_h, stride_w; /* 0 means the kernel's size (PyTorch's default) */
  int ceil_mode;             /* PyTorch's: round the output size up */
  int avg_include_padding;   /* AVG: divide by the window's positions in the padded input
                                (PyTorch's count_include_pad, cuDNN's INCLUDE_PADDING); 0: by
                                its input elements (popnn, cuDNN's EXCLUDE_PADDING) */
  int max_grad_all;          /* MAX: the gradient to every position equal to the maximum
                                (popnn); 0: to the first in the window (PyTorch, cuDNN) */
  const char *options;
} aspen_pool2d_desc;

ASPEN_API aspen_status aspen_pool2d_output_shape(const aspen_pool2d_desc *desc, size_t *p,
                                                 size_t *q);
ASPEN_API aspen_status aspen_pool2d_forward(aspen_backend *backend, const aspen_pool2d_desc *desc,
                                            const void *x, void *y, void *stream);
/* dx from dy; MAX reads x and the forward's y, and y NULL recomputes it. */
ASPEN_API aspen_status aspen_pool2d_backward(aspen_backend *backend,
                                             const aspen_pool2d_desc *desc, const void *x,
                                             const void *y, const void *dy, void *dx,
                                             void *stream);

typedef struct aspen_batchnorm_desc {
  aspen_dtype dtype;                     /* of x, y, dx, dy; parameters and statistics are float32 */
  size_t batch, channels, height, width; /* N, C, H, W (H = W = 1 for [N, C]) */
  double epsilon;                        /* added to the variance */
  double momentum; /* running = (1 - momentum) running + momentum batch (cuDNN's
                      exponentialAverageFactor, PyTorch's momentum) */
  const char *options;
} aspen_batchnorm_desc;

/* Training: y = gamma (x - mean) / sqrt(var + eps) + beta with this batch's mean and biased
 * variance a channel; running_mean and running_var (both NULL to skip) are updated in place,
 * the running variance with the unbiased variance; save_mean and save_inv_std (both NULL to
 * skip) receive the mean and 1 / sqrt(var + eps) for the backward. */
ASPEN_API aspen_status aspen_batchnorm_forward_training(
    aspen_backend *backend, const aspen_batchnorm_desc *desc, const void *x, const float *gamma,
    const float *beta, void *y, float *running_mean, float *running_var, float *save_mean,
    float *save_inv_std, void *stream);
/* Inference: y = gamma (x - running_mean) / sqrt(running_var + eps) + beta. */
ASPEN_API aspen_status aspen_batchnorm_forward_inference(
    aspen_backend *backend, const aspen_batchnorm_desc *desc, const void *x, const float *gamma,
    const float *beta, const float *running_mean, const float *running_var, void *y,
    void *stream);
/* dx, dgamma and dbeta from x, dy and the training forward's save_mean and save_inv_std. */
ASPEN_API aspen_status aspen_batchnorm_backward(aspen_backend *backend,
                                                const aspen_batchnorm_desc *desc, const void *x,
                                                const void *dy, const float *gamma,
                                                const float *save_mean, const float *save_inv_std,
                                                void *dx, float *dgamma, float *dbeta,
                                                void *stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ASPEN_BACKEND_H */
