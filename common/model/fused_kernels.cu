// See fused_kernels.h. Products and sums use the _rn intrinsics so that nvcc never contracts them
// into a fused multiply-add: ATen rounds each to float on its own.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "common/model/fused_kernels.h"

namespace unmask::model::fused_kernels {
namespace {

constexpr int kThreads = 256;

__device__ inline float Load(const Bf16Bits* p, std::int64_t i) {
  return __bfloat162float(__ushort_as_bfloat16(p[i]));
}

__device__ inline Bf16Bits Round(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }

__global__ void SquareKernel(float* out, const Bf16Bits* x, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float v = Load(x, i);
    out[i] = __fmul_rn(v, v);
  }
}

__global__ void RmsNormTailKernel(Bf16Bits* out, const Bf16Bits* x, const float* var, const Bf16Bits* w, float eps,
                                  std::int64_t rows, std::int64_t d) {
  const std::int64_t n = rows * d;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float scale = rsqrtf(__fadd_rn(var[i / d], eps));
    const Bf16Bits normed = Round(__fmul_rn(Load(x, i), scale));
    out[i] = Round(__fmul_rn(Load(w, i % d), Load(&normed, 0)));
  }
}

__global__ void RotaryKernel(Bf16Bits* out, const Bf16Bits* x, const float* cos, const float* sin, std::int64_t rows,
                             std::int64_t heads, std::int64_t hd) {
  const std::int64_t n = rows * heads * hd, half = hd / 2;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t j = i % hd, row = i / (heads * hd);
    const float t = Load(x, i);
    const float r = j < half ? -Load(x, i + half) : Load(x, i - half);
    const std::int64_t c = row * hd + j;
    out[i] = Round(__fadd_rn(__fmul_rn(t, cos[c]), __fmul_rn(r, sin[c])));
  }
}

__global__ void SiluMulKernel(Bf16Bits* out, const Bf16Bits* gate, const Bf16Bits* up, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = Load(gate, i);
    const Bf16Bits silu = Round(g / (1.0f + expf(-g)));
    out[i] = Round(__fmul_rn(Load(&silu, 0), Load(up, i)));
  }
}

// A block per row (grid-stride over rows), its threads across the row: no division per element.
template <typename Out>
__device__ void DequantRow(const dequant::Int8Layout& l, std::int64_t r, Out* out_row) {
  for (std::int64_t c = threadIdx.x; c < l.cols; c += blockDim.x) dequant::Int8Element(l, r, c, out_row);
}

template <typename Out>
__device__ void DequantRow(const dequant::Int4Layout& l, std::int64_t r, Out* out_row) {
  for (std::int64_t p = threadIdx.x; p < l.packed_cols; p += blockDim.x) dequant::Int4Byte(l, r, p, out_row);
}

template <typename Out, typename Layout>
__global__ void DequantKernel(Out* out, Layout l, std::int64_t rows) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) DequantRow(l, r, out + r * l.cols);
}

unsigned RowBlocks(std::int64_t rows) {
  return static_cast<unsigned>(rows < 65535 * 16 ? (rows > 0 ? rows : 1) : 65535 * 16);
}

unsigned Blocks(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks > 0 ? blocks : 1) : 65535 * 16);
}

void Check(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

void Square(float* out, const Bf16Bits* x, std::int64_t n, void* stream) {
  SquareKernel<<<Blocks(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(out, x, n);
  Check("fused Square");
}

void RmsNormTail(Bf16Bits* out, const Bf16Bits* x, const float* var, const Bf16Bits* w, float eps, std::int64_t rows,
                 std::int64_t d, void* stream) {
  RmsNormTailKernel<<<Blocks(rows * d), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(out, x, var, w, eps, rows,
                                                                                          d);
  Check("fused RmsNormTail");
}

void Rotary(Bf16Bits* out, const Bf16Bits* x, const float* cos, const float* sin, std::int64_t rows,
            std::int64_t heads, std::int64_t hd, void* stream) {
  RotaryKernel<<<Blocks(rows * heads * hd), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(out, x, cos, sin, rows,
                                                                                              heads, hd);
  Check("fused Rotary");
}

void SiluMul(Bf16Bits* out, const Bf16Bits* gate, const Bf16Bits* up, std::int64_t n, void* stream) {
  SiluMulKernel<<<Blocks(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(out, gate, up, n);
  Check("fused SiluMul");
}

template <typename Layout>
void Dequantize(void* out, bool out_float, const Layout& layout, std::int64_t rows, void* stream, const char* what) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (out_float)
    DequantKernel<<<RowBlocks(rows), kThreads, 0, s>>>(static_cast<float*>(out), layout, rows);
  else
    DequantKernel<<<RowBlocks(rows), kThreads, 0, s>>>(static_cast<Bf16Bits*>(out), layout, rows);
  Check(what);
}

void DequantizeInt8(void* out, bool out_float, const dequant::Int8Layout& layout, std::int64_t rows, void* stream) {
  Dequantize(out, out_float, layout, rows, stream, "fused DequantizeInt8");
}

void DequantizeInt4(void* out, bool out_float, const dequant::Int4Layout& layout, std::int64_t rows, void* stream) {
  Dequantize(out, out_float, layout, rows, stream, "fused DequantizeInt4");
}

}  // namespace unmask::model::fused_kernels
