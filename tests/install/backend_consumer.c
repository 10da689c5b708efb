/* A C99 program using the installed backend (aspen/backend.h) through pkg-config: a matrix
 * product, an LSTM forward against values worked out by hand, and an error code with its
 * message, then a pool on the program's own (serial) parallel loop. Prints "backend C consumer
 * ok" when everything agrees. */
#include <aspen/backend.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The caller's parallel loop (aspen_backend_set_parallel_for): serial, counting iterations. */
static void serial_for(void *context, size_t n, void (*task)(void *, size_t), void *task_context) {
  for (size_t i = 0; i < n; ++i) {
    ++*(size_t *)context;
    task(task_context, i);
  }
}

static int fail(const char *what) {
  printf("backend C consumer FAILED: %s (%s)\n", what, aspen_last_error());
  return 1;
}

int main(void) {
  aspen_backend *backend = NULL;
  if (aspen_backend_create("cpu", 0, &backend) != ASPEN_OK)
    return fail("aspen_backend_create");

  /* [1 2; 3 4] . [5 6; 7 8] = [19 22; 43 50] */
  const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
  float c[4] = {0};
  if (aspen_matmul(backend, ASPEN_DTYPE_FLOAT32, 2, 2, 2, a, b, c, NULL) != ASPEN_OK)
    return fail("aspen_matmul");
  if (c[0] != 19 || c[1] != 22 || c[2] != 43 || c[3] != 50)
    return fail("the product is wrong");

  /* An LSTM with zero weights: every gate is sigmoid(0) = 0.5 and the candidate tanh(0) = 0,
   * so c_t = c_{t-1} / 2 and h_t = tanh(c_t) / 2; from c0 = 1: c = 0.5, 0.25. */
  aspen_rnn_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.cell = ASPEN_RNN_LSTM;
  desc.dtype = ASPEN_DTYPE_FLOAT32;
  desc.seq_len = 2;
  desc.batch = 1;
  desc.input_size = 1;
  desc.hidden_size = 1;
  const float x[2] = {0.3f, -0.7f}, h0[1] = {0}, c0[1] = {1};
  const float wi[4] = {0}, wo[4] = {0}, bias[4] = {0};
  float y[2], hn[1], cn[1];
  if (aspen_rnn_forward(backend, &desc, x, h0, c0, wi, wo, bias, NULL, y, hn, cn, NULL, NULL) !=
      ASPEN_OK)
    return fail("aspen_rnn_forward");
  if (fabs(y[0] - 0.5 * tanh(0.5)) > 1e-6 || fabs(y[1] - 0.5 * tanh(0.25)) > 1e-6 ||
      fabs(hn[0] - y[1]) > 0 || fabs(cn[0] - 0.25) > 1e-6)
    return fail("the LSTM's outputs are wrong");

  desc.batch = 0;
  if (aspen_rnn_forward(backend, &desc, x, h0, c0, wi, wo, bias, NULL, y, hn, cn, NULL, NULL) !=
          ASPEN_ERROR_INVALID_ARGUMENT ||
      strstr(aspen_last_error(), "desc->batch is 0") == NULL)
    return fail("a zero batch was not refused with its message");
  aspen_backend_destroy(backend);

  /* A 2x2 max pool of 32 channels of 32x32 (large enough for the executor to split), planned
   * over 4 tiles and run on the program's loop: each output is its window's largest element,
   * (i + 1) * (j + 1) at its far corner, less its channel. */
  if (aspen_backend_create("cpu:4", 0, &backend) != ASPEN_OK)
    return fail("aspen_backend_create(cpu:4)");
  size_t iterations = 0;
  if (aspen_backend_set_parallel_for(backend, serial_for, &iterations) != ASPEN_OK)
    return fail("aspen_backend_set_parallel_for");
  enum { C = 32, H = 32, P = H / 2 };
  static float image[C * H * H], pooled[C * P * P];
  for (size_t k = 0; k < C; ++k)
    for (size_t i = 0; i < H; ++i)
      for (size_t j = 0; j < H; ++j)
        image[(k * H + i) * H + j] = (float)((i + 1) * (j + 1)) - (float)k;
  aspen_pool2d_desc pool;
  memset(&pool, 0, sizeof pool);
  pool.dtype = ASPEN_DTYPE_FLOAT32;
  pool.mode = ASPEN_POOL_MAX;
  pool.batch = 1;
  pool.channels = C;
  pool.height = pool.width = H;
  pool.kernel_h = pool.kernel_w = 2;
  if (aspen_pool2d_forward(backend, &pool, image, pooled, NULL) != ASPEN_OK)
    return fail("aspen_pool2d_forward");
  for (size_t k = 0; k < C; ++k)
    for (size_t p = 0; p < P; ++p)
      for (size_t q = 0; q < P; ++q)
        if (pooled[(k * P + p) * P + q] != (float)((2 * p + 2) * (2 * q + 2)) - (float)k)
          return fail("the max pool is wrong");
  if (iterations == 0)
    return fail("the pool did not run on the program's parallel loop");
  aspen_backend_destroy(backend);
  printf("backend C consumer ok\n");
  return 0;
}
