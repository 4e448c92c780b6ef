// cmax's own CUDA probes (issue 19): what a GPU does when it works, timed on the GPU itself.
// Built by nvcc into libcmax-probes.so where the CUDA toolkit is present; cmax loads it with
// dlopen only when NVML shows a GPU (src/active/cuda_probes.hpp), so that neither the build nor
// the binary needs CUDA. Each call sets its device, measures after a warm-up, frees what it took
// and says in words what failed.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include "cuda_probes/probe_abi.h"

namespace {

int Failed(cmax_probe_result* result, const char* what, const char* why) {
  std::snprintf(result->error, sizeof result->error, "%s: %s", what, why);
  return 1;
}
int Failed(cmax_probe_result* result, const char* what, cudaError_t error) {
  return Failed(result, what, cudaGetErrorString(error));
}
int Failed(cmax_probe_result* result, const char* what, cublasStatus_t status) {
  return Failed(result, what, cublasGetStatusString(status));
}

void Clear(cmax_probe_result* result) {
  std::memset(result, 0, sizeof *result);
}

// Owners, so that every return frees what was taken.
struct DeviceBuffer {
  void* p = nullptr;
  ~DeviceBuffer() {
    if (p != nullptr) cudaFree(p);
  }
};
struct HostBuffer {
  void* p = nullptr;
  ~HostBuffer() {
    if (p != nullptr) cudaFreeHost(p);
  }
};
struct Events {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  ~Events() {
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
  }
};
struct Blas {
  cublasHandle_t handle = nullptr;
  ~Blas() {
    if (handle != nullptr) cublasDestroy(handle);
  }
};

#define CMAX_CUDA(what, call)                                                 \
  do {                                                                        \
    const cudaError_t cmax_error_ = (call);                                   \
    if (cmax_error_ != cudaSuccess) return Failed(result, what, cmax_error_); \
  } while (0)
#define CMAX_BLAS(what, call)                                                             \
  do {                                                                                    \
    const cublasStatus_t cmax_status_ = (call);                                           \
    if (cmax_status_ != CUBLAS_STATUS_SUCCESS) return Failed(result, what, cmax_status_); \
  } while (0)

// Inputs of known values, so that the burn's results can be compared.
__global__ void FillBf16(__nv_bfloat16* data, size_t count, unsigned seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const unsigned h = (static_cast<unsigned>(i) * 2654435761u) ^ seed;
    data[i] = __float2bfloat16(static_cast<float>(h % 2001u) / 1000.0f - 1.0f);
  }
}

// Sixteen bytes a thread a step: the widest load and store, so that the copy is limited by the
// memory and not by instructions.
__global__ void Copy16(const int4* __restrict__ from, int4* __restrict__ to, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    to[i] = from[i];
  }
}

__global__ void CountMismatches(const __nv_bfloat16* a, const __nv_bfloat16* b, size_t count,
                                unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const unsigned short x = *reinterpret_cast<const unsigned short*>(&a[i]);
    const unsigned short y = *reinterpret_cast<const unsigned short*>(&b[i]);
    local += x != y ? 1 : 0;
  }
  if (local != 0) atomicAdd(mismatches, local);
}

int Blocks(int device) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return (sms > 0 ? sms : 80) * 8;
}

// C = A x B, n x n x n, BF16 in and out, FP32 accumulation: what training's matrices do.
cublasStatus_t Multiply(cublasHandle_t handle, int n, const void* a, const void* b, void* c) {
  const float alpha = 1.0f;
  const float beta = 0.0f;
  return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b,
                      CUDA_R_16BF, n, &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT);
}

// The operands of a multiply: A and B filled, C and the reference result allocated.
struct Operands {
  DeviceBuffer a, b, c, reference;
};
int Prepare(int n, bool with_reference, Operands& m, cmax_probe_result* result) {
  const size_t count = static_cast<size_t>(n) * n;
  const size_t bytes = count * sizeof(__nv_bfloat16);
  CMAX_CUDA("cudaMalloc (A)", cudaMalloc(&m.a.p, bytes));
  CMAX_CUDA("cudaMalloc (B)", cudaMalloc(&m.b.p, bytes));
  CMAX_CUDA("cudaMalloc (C)", cudaMalloc(&m.c.p, bytes));
  if (with_reference) CMAX_CUDA("cudaMalloc (reference)", cudaMalloc(&m.reference.p, bytes));
  FillBf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(m.a.p), count, 17u);
  FillBf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(m.b.p), count, 91u);
  CMAX_CUDA("filling the matrices", cudaGetLastError());
  return 0;
}

}  // namespace

extern "C" {

int cmax_probe_abi_version(void) {
  return CMAX_PROBE_ABI_VERSION;
}

int cmax_probe_device_count(cmax_probe_result* result) {
  Clear(result);
  int count = 0;
  CMAX_CUDA("cudaGetDeviceCount", cudaGetDeviceCount(&count));
  result->value = count;
  return 0;
}

int cmax_probe_device_pci_bus_id(int device, char* bus_id, int length, cmax_probe_result* result) {
  Clear(result);
  CMAX_CUDA("cudaDeviceGetPCIBusId", cudaDeviceGetPCIBusId(bus_id, length, device));
  return 0;
}

int cmax_probe_gemm_bf16(int device, int n, int iterations, cmax_probe_result* result) {
  Clear(result);
  if (n <= 0 || iterations <= 0) return Failed(result, "gemm", "n and iterations must be > 0");
  CMAX_CUDA("cudaSetDevice", cudaSetDevice(device));
  Operands m;
  if (Prepare(n, false, m, result) != 0) return 1;
  Blas blas;
  CMAX_BLAS("cublasCreate", cublasCreate(&blas.handle));
  // Warm-up: cuBLAS picks and loads its kernel, the clocks rise.
  for (int i = 0; i < 3; ++i)
    CMAX_BLAS("cublasGemmEx", Multiply(blas.handle, n, m.a.p, m.b.p, m.c.p));
  Events events;
  CMAX_CUDA("cudaEventCreate", cudaEventCreate(&events.start));
  CMAX_CUDA("cudaEventCreate", cudaEventCreate(&events.stop));
  CMAX_CUDA("cudaEventRecord", cudaEventRecord(events.start));
  for (int i = 0; i < iterations; ++i) {
    CMAX_BLAS("cublasGemmEx", Multiply(blas.handle, n, m.a.p, m.b.p, m.c.p));
  }
  CMAX_CUDA("cudaEventRecord", cudaEventRecord(events.stop));
  CMAX_CUDA("the multiplies", cudaEventSynchronize(events.stop));
  float ms = 0;
  CMAX_CUDA("cudaEventElapsedTime", cudaEventElapsedTime(&ms, events.start, events.stop));
  result->seconds = ms / 1e3;
  result->value = 2.0 * n * static_cast<double>(n) * n * iterations / result->seconds / 1e12;
  return 0;
}

int cmax_probe_hbm_copy(int device, unsigned long long bytes, int iterations,
                        cmax_probe_result* result) {
  Clear(result);
  if (bytes < 16 || iterations <= 0)
    return Failed(result, "copy", "bytes and iterations too small");
  CMAX_CUDA("cudaSetDevice", cudaSetDevice(device));
  const size_t count = bytes / sizeof(int4);
  DeviceBuffer from, to;
  CMAX_CUDA("cudaMalloc", cudaMalloc(&from.p, count * sizeof(int4)));
  CMAX_CUDA("cudaMalloc", cudaMalloc(&to.p, count * sizeof(int4)));
  CMAX_CUDA("cudaMemset", cudaMemset(from.p, 1, count * sizeof(int4)));
  const int blocks = Blocks(device);
  const auto* src = static_cast<const int4*>(from.p);
  auto* dst = static_cast<int4*>(to.p);
  for (int i = 0; i < 2; ++i) Copy16<<<blocks, 512>>>(src, dst, count);
  CMAX_CUDA("the copy kernel", cudaGetLastError());
  Events events;
  CMAX_CUDA("cudaEventCreate", cudaEventCreate(&events.start));
  CMAX_CUDA("cudaEventCreate", cudaEventCreate(&events.stop));
  CMAX_CUDA("cudaEventRecord", cudaEventRecord(events.start));
  for (int i = 0; i < iterations; ++i) Copy16<<<blocks, 512>>>(src, dst, count);
  CMAX_CUDA("cudaEventRecord", cudaEventRecord(events.stop));
  CMAX_CUDA("the copies", cudaEventSynchronize(events.stop));
  float ms = 0;
  CMAX_CUDA("cudaEventElapsedTime", cudaEventElapsedTime(&ms, events.start, events.stop));
  result->seconds = ms / 1e3;
  result->value = 2.0 * count * sizeof(int4) * iterations / result->seconds / 1e9;
  return 0;
}

int cmax_probe_host_copy(int device, int to_device, unsigned long long bytes, int iterations,
                         cmax_probe_result* result) {
  Clear(result);
  if (bytes == 0 || iterations <= 0)
    return Failed(result, "copy", "bytes and iterations too small");
  CMAX_CUDA("cudaSetDevice", cudaSetDevice(device));
  HostBuffer host;
  DeviceBuffer gpu;
  CMAX_CUDA("cudaMallocHost", cudaMallocHost(&host.p, bytes));
  CMAX_CUDA("cudaMalloc", cudaMalloc(&gpu.p, bytes));
  std::memset(host.p, 1, bytes);
  void* dst = to_device != 0 ? gpu.p : host.p;
  const void* src = to_device != 0 ? host.p : gpu.p;
  const cudaMemcpyKind kind = to_device != 0 ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  CMAX_CUDA("cudaMemcpyAsync", cudaMemcpyAsync(dst, src, bytes, kind));
  Events events;
  CMAX_CUDA("cudaEventCreate", cudaEventCreate(&events.start));
  CMAX_CUDA("cudaEventCreate", cudaEventCreate(&events.stop));
  CMAX_CUDA("cudaEventRecord", cudaEventRecord(events.start));
  for (int i = 0; i < iterations; ++i) {
    CMAX_CUDA("cudaMemcpyAsync", cudaMemcpyAsync(dst, src, bytes, kind));
  }
  CMAX_CUDA("cudaEventRecord", cudaEventRecord(events.stop));
  CMAX_CUDA("the copies", cudaEventSynchronize(events.stop));
  float ms = 0;
  CMAX_CUDA("cudaEventElapsedTime", cudaEventElapsedTime(&ms, events.start, events.stop));
  result->seconds = ms / 1e3;
  result->value = static_cast<double>(bytes) * iterations / result->seconds / 1e9;
  return 0;
}

int cmax_probe_burn(int device, int n, double seconds, cmax_probe_go_on go_on, void* context,
                    cmax_probe_result* result) {
  Clear(result);
  if (n <= 0 || seconds <= 0) return Failed(result, "burn", "n and seconds must be > 0");
  CMAX_CUDA("cudaSetDevice", cudaSetDevice(device));
  Operands m;
  if (Prepare(n, true, m, result) != 0) return 1;
  Blas blas;
  CMAX_BLAS("cublasCreate", cublasCreate(&blas.handle));
  CMAX_BLAS("cublasGemmEx", Multiply(blas.handle, n, m.a.p, m.b.p, m.reference.p));
  DeviceBuffer counter;
  CMAX_CUDA("cudaMalloc", cudaMalloc(&counter.p, sizeof(unsigned long long)));
  CMAX_CUDA("cudaMemset", cudaMemset(counter.p, 0, sizeof(unsigned long long)));
  CMAX_CUDA("the first multiply", cudaDeviceSynchronize());
  const size_t count = static_cast<size_t>(n) * n;
  const int blocks = Blocks(device);
  // Ten multiplies between looks at the clock and at go_on: short enough to stop within a
  // fraction of a second, long enough that the looks cost nothing.
  constexpr int kBatch = 10;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  unsigned long long multiplies = 0;
  while (elapsed < seconds && (go_on == nullptr || go_on(context) != 0)) {
    for (int i = 0; i < kBatch; ++i) {
      CMAX_BLAS("cublasGemmEx", Multiply(blas.handle, n, m.a.p, m.b.p, m.c.p));
      CountMismatches<<<blocks, 256>>>(static_cast<const __nv_bfloat16*>(m.c.p),
                                       static_cast<const __nv_bfloat16*>(m.reference.p), count,
                                       static_cast<unsigned long long*>(counter.p));
    }
    CMAX_CUDA("the burn", cudaDeviceSynchronize());
    multiplies += kBatch;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  CMAX_CUDA("cudaMemcpy", cudaMemcpy(&result->mismatches, counter.p, sizeof(unsigned long long),
                                     cudaMemcpyDeviceToHost));
  result->seconds = elapsed;
  result->value =
      elapsed > 0 ? 2.0 * n * static_cast<double>(n) * n * multiplies / elapsed / 1e12 : 0;
  return 0;
}

}  // extern "C"
