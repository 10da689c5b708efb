// The CPU executor's convolution calls (Kernels.hpp: ConvForward, ConvBackwardData,
// ConvBackwardFilter) on host memory.
//
// Per image b and group g, with P output positions, T kernel taps and the geometry's tables
// flattened once a call into offsets[t][p] (the input element output p reads through tap t, or
// -1):
//   forward          out_bg [Co, P] = W_g [Co, Ci*T] . col_bg [Ci*T, P], a chunk of output
//                    positions at a time: col_bg's chunk is built (im2col) in a buffer of about
//                    kChunkBytes, then one sgemm writes the chunk's columns of out_bg. A 1x1
//                    convolution that reads input element p for output p needs no col: sgemm
//                    reads the image itself.
//   backward data    dcol [rows, P chunk] = W_g^T . outGrad_bg, then col2im adds dcol into the
//                    input gradient; tasks own disjoint input channels, so no two add into one
//                    element.
//   backward filter  dW_g[:, rows] (+)= scale * sum over images and chunks of
//                    outGrad_bg[:, chunk] . col_bg[rows, chunk]^T, tasks owning disjoint rows
//                    of Ci*T.
// Every task's work and order are functions of the shape alone, so the bits do not depend on
// the executor's thread count. Tasks run on the pool when the BLAS library runs one thread (one
// sgemm a task), one after another otherwise (each sgemm then uses the library's threads).
// Half data are widened to float first and results rounded once at the end.
#pragma once

#include "ThreadPool.hpp"
#include "compiler/CompiledGraph.hpp"

#include <memory>

namespace aspen::detail {

// A call's tables flattened and split for im2col and col2im, made once at load.
struct CpuConvLayout;

// The layout of a convolution call; raises aspen::error when a dimension exceeds what the BLAS
// interface can index.
std::shared_ptr<const CpuConvLayout> prepareCpuConv(const CompiledKernel &kernel);

// operands: the kernel's, in KernelKinds.hpp's order (scale may be null).
void cpuConv(const CompiledKernel &kernel, const CpuConvLayout &layout, void *const *operands,
             ThreadPool &pool);

} // namespace aspen::detail
