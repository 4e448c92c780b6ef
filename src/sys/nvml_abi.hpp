// The part of NVML's C ABI cmax uses, declared by us: there is no nvml.h on build machines and
// the binary must start on hosts without a driver. Layouts follow NVIDIA's header (checked in
// ../shared/reference/nvml.md); the loader (sys/nvml.cpp) and the simulated library
// (nvml_sim/) both use these declarations, so they cannot drift apart.
#pragma once

#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;                        // NOLINT: NVML's own names, kept for the ABI
typedef struct nvmlDevice_st* nvmlDevice_t;      // NOLINT
typedef struct nvmlEventSet_st* nvmlEventSet_t;  // NOLINT

struct nvmlPciInfo_t {  // NOLINT: 68 bytes, 4-byte aligned
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

struct nvmlEventData_t {  // NOLINT: 32 bytes
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

union nvmlValue_t {  // NOLINT: 8 bytes
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  signed int siVal;
  unsigned short usVal;
};

struct nvmlFieldValue_t {  // NOLINT: 40 bytes
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};

}  // extern "C"

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
