// The part of NVML's C ABI cmax uses, declared by us: there is no nvml.h on build machines and
// the binary must start on hosts without a driver. Layouts follow NVIDIA's nvml.h and its API
// reference (docs.nvidia.com/deploy/nvml-api); the loader (sys/nvml.cpp) and the simulated library
// (nvml_sim/) both use these declarations, so they cannot drift apart.
#pragma once

#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;                        // NOLINT(readability-identifier-naming)
typedef struct nvmlDevice_st* nvmlDevice_t;      // NOLINT(readability-identifier-naming)
typedef struct nvmlEventSet_st* nvmlEventSet_t;  // NOLINT(readability-identifier-naming)

struct nvmlPciInfo_t {          // NOLINT(readability-identifier-naming)
  char busIdLegacy[16];         // NOLINT(readability-identifier-naming)
  unsigned int domain;          // NOLINT(readability-identifier-naming)
  unsigned int bus;             // NOLINT(readability-identifier-naming)
  unsigned int device;          // NOLINT(readability-identifier-naming)
  unsigned int pciDeviceId;     // NOLINT(readability-identifier-naming)
  unsigned int pciSubSystemId;  // NOLINT(readability-identifier-naming)
  char busId[32];               // NOLINT(readability-identifier-naming)
};

struct nvmlEventData_t {           // NOLINT(readability-identifier-naming)
  nvmlDevice_t device;             // NOLINT(readability-identifier-naming)
  unsigned long long eventType;    // NOLINT(readability-identifier-naming)
  unsigned long long eventData;    // NOLINT(readability-identifier-naming)
  unsigned int gpuInstanceId;      // NOLINT(readability-identifier-naming)
  unsigned int computeInstanceId;  // NOLINT(readability-identifier-naming)
};

union nvmlValue_t {           // NOLINT(readability-identifier-naming)
  double dVal;                // NOLINT(readability-identifier-naming)
  unsigned int uiVal;         // NOLINT(readability-identifier-naming)
  unsigned long ulVal;        // NOLINT(readability-identifier-naming)
  unsigned long long ullVal;  // NOLINT(readability-identifier-naming)
  signed long long sllVal;    // NOLINT(readability-identifier-naming)
  signed int siVal;           // NOLINT(readability-identifier-naming)
  unsigned short usVal;       // NOLINT(readability-identifier-naming)
};

struct nvmlFieldValue_t {   // NOLINT(readability-identifier-naming)
  unsigned int fieldId;     // NOLINT(readability-identifier-naming)
  unsigned int scopeId;     // NOLINT(readability-identifier-naming)
  long long timestamp;      // NOLINT(readability-identifier-naming)
  long long latencyUsec;    // NOLINT(readability-identifier-naming)
  int valueType;            // NOLINT(readability-identifier-naming)
  nvmlReturn_t nvmlReturn;  // NOLINT(readability-identifier-naming)
  nvmlValue_t value;        // NOLINT(readability-identifier-naming)
};

struct nvmlUtilization_t {  // NOLINT(readability-identifier-naming)
  unsigned int gpu;         // NOLINT(readability-identifier-naming) percent of time a kernel ran
  unsigned int memory;      // NOLINT(readability-identifier-naming) percent of time memory was used
};

}  // extern "C"

static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t layout");
static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");
static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t layout");
static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t layout");

namespace cmax::nvml {

// nvmlReturn_t values.
inline constexpr int kSuccess = 0;
inline constexpr int kUninitialized = 1;
inline constexpr int kInvalidArgument = 2;
inline constexpr int kNotSupported = 3;
inline constexpr int kNoPermission = 4;
inline constexpr int kNotFound = 6;
inline constexpr int kInsufficientSize = 7;
inline constexpr int kDriverNotLoaded = 9;
inline constexpr int kTimeout = 10;
inline constexpr int kLibraryNotFound = 12;
inline constexpr int kFunctionNotFound = 13;
inline constexpr int kGpuIsLost = 15;
inline constexpr int kResetRequired = 16;
inline constexpr int kUnknown = 999;

// Event type bits.
inline constexpr unsigned long long kEventSingleBitEcc = 0x1;
inline constexpr unsigned long long kEventDoubleBitEcc = 0x2;
inline constexpr unsigned long long kEventXidCritical = 0x8;

// Field ids.
inline constexpr unsigned kFieldGpuRecoveryAction = 230;

// Enum values used in calls.
inline constexpr int kTemperatureGpu = 0;
inline constexpr int kClockGraphics = 0;
inline constexpr int kClockSm = 1;
inline constexpr int kClockMem = 2;
inline constexpr int kMemoryErrorCorrected = 0;
inline constexpr int kMemoryErrorUncorrected = 1;
inline constexpr int kVolatileEcc = 0;
inline constexpr int kAggregateEcc = 1;
inline constexpr int kRetiredMultipleSbe = 0;
inline constexpr int kRetiredDbe = 1;

// Buffer sizes, bytes including the NUL.
inline constexpr unsigned kUuidBufferSize = 96;
inline constexpr unsigned kNameBufferSize = 96;
inline constexpr unsigned kDriverVersionBufferSize = 80;

}  // namespace cmax::nvml
