/* The C ABI between cmax and its CUDA probes (libcmax-probes.so, built by nvcc where the CUDA
 * toolkit is present and loaded by cmax with dlopen only when a GPU is): C types only, so that
 * the library and the binary need not share a C++ runtime, and one version number that both
 * check, so that a library left from another build is refused rather than misread. */
#ifndef CMAX_CUDA_PROBES_PROBE_ABI_H
#define CMAX_CUDA_PROBES_PROBE_ABI_H

#include <stddef.h>

/* C names, as C ABIs have them. */
/* NOLINTBEGIN(readability-identifier-naming) */
#ifdef __cplusplus
extern "C" {
#endif

#define CMAX_PROBE_ABI_VERSION 1

/* The library is built with hidden visibility; these are what it shows. */
#define CMAX_PROBE_API __attribute__((visibility("default")))

typedef struct cmax_probe_result {
  double value;                  /* the figure: TFLOP/s, GB/s, a device count */
  double seconds;                /* the time it was measured over */
  unsigned long long mismatches; /* the burn: result elements unlike the first result's */
  char error[256];               /* why the call failed (return value non-zero) */
} cmax_probe_result;

/* Asked between kernel launches of the burn: non-zero to go on. */
typedef int (*cmax_probe_go_on)(void* context);

/* Every function returns 0, or non-zero with result->error filled in. */
CMAX_PROBE_API int cmax_probe_abi_version(void);
/* The CUDA devices this process sees (value); an error where CUDA has no driver or device. */
CMAX_PROBE_API int cmax_probe_device_count(cmax_probe_result* result);
/* The device's PCI address as CUDA writes it ("0000:17:00.0"), so that cmax names the GPU by
 * NVML's index whatever CUDA's own order (fastest first, CUDA_VISIBLE_DEVICES). */
CMAX_PROBE_API int cmax_probe_device_pci_bus_id(int device, char* bus_id, int length,
                                                cmax_probe_result* result);
/* Dense BF16 matrix multiply through cuBLAS (n x n x n, FP32 accumulation): TFLOP/s. */
CMAX_PROBE_API int cmax_probe_gemm_bf16(int device, int n, int iterations,
                                        cmax_probe_result* result);
/* Device memory copied by a kernel: GB/s counting what is read and what is written, the way
 * memory bandwidth is quoted. */
CMAX_PROBE_API int cmax_probe_hbm_copy(int device, unsigned long long bytes, int iterations,
                                       cmax_probe_result* result);
/* Pinned host memory to the device (to_device non-zero) or back, by the copy engine: GB/s. */
CMAX_PROBE_API int cmax_probe_host_copy(int device, int to_device, unsigned long long bytes,
                                        int iterations, cmax_probe_result* result);
/* Matrix multiplies for `seconds` or until go_on says stop: TFLOP/s over the burn, and every
 * result compared with the first (the same inputs must give the same output). */
CMAX_PROBE_API int cmax_probe_burn(int device, int n, double seconds, cmax_probe_go_on go_on,
                                   void* context, cmax_probe_result* result);

#ifdef __cplusplus
}
#endif
/* NOLINTEND(readability-identifier-naming) */

#endif /* CMAX_CUDA_PROBES_PROBE_ABI_H */
