// Synthetic PyTorch profiler (Kineto) traces, in the shape of real ones (the reference's
// nccl_data.json.gz from HTA: deviceProperties, distributedInfo, traceEvents of cpu_op,
// cuda_runtime launches, kernels with their stream and correlation, NCCL kernels with c10d's
// collective arguments, ProfilerStep#N marks, flows, metadata), with times the test chooses, so
// that what the analysis must find is known by hand. Used by the tests and by the 1 GB
// benchmark (which flushes `text` to a file as it grows).
#pragma once

#include <cstdint>
#include <fmt/format.h>
#include <optional>
#include <string>
#include <string_view>

namespace cmax::testing {

class KinetoWriter {
 public:
  // Times are given in nanoseconds from `base_ns` (a Kineto-like epoch in µs with decimals).
  explicit KinetoWriter(int64_t base_ns = 4458676416788066) : base_ns_(base_ns) {}

  std::string text;

  void Begin(std::optional<int> rank, int world_size) {
    text +=
        "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": "
        "\"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85029158912, \"numSms\": 132}\n  ],\n";
    if (rank) {
      text += fmt::format(
          "  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}, "
          "\"pg_count\": 1, \"pg_config\": [{{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", "
          "\"pg_size\": {}, \"ranks\": [0]}}], \"nccl_version\": \"2.21.5\"}},\n",
          *rank, world_size, world_size);
    }
    text += "  \"traceEvents\": [\n";
    text +=
        R"(  {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}})";
  }

  // Ends the events and the object; `cut` leaves the trace without its tail (a crash).
  void End() {
    text +=
        "\n  ],\n  \"traceName\": \"rank_trace.json\",\n  \"displayTimeUnit\": \"ms\",\n"
        "  \"baseTimeNanoseconds\": 1700000000000000000\n}\n";
  }

  std::string Ts(int64_t ns) const {
    const int64_t at = base_ns_ + ns;
    return fmt::format("{}.{:03}", at / 1000, at % 1000);
  }
  static std::string Us(int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

  // A host operator with the argument lists real traces carry (most of a trace's bytes).
  void CpuOp(std::string_view name, int64_t ts_ns, int64_t dur_ns) {
    ++external_;
    text += fmt::format(
        ",\n  {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{}\", \"pid\": 2910249, \"tid\": "
        "2910249, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"Record function "
        "id\": 0, \"Ev Idx\": {}, \"Input Dims\": [[8192, 4096], [4096, 4096], []], \"Input "
        "type\": [\"c10::BFloat16\", \"c10::BFloat16\", \"\"], \"Concrete Inputs\": [\"\", \"\", "
        "\"\"]}}}}",
        name, Ts(ts_ns), Us(dur_ns), external_, external_);
  }

  void Step(int64_t step, int64_t ts_ns, int64_t dur_ns) {
    text += fmt::format(
        ",\n  {{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{}\", "
        "\"pid\": 2910249, \"tid\": 2910249, \"ts\": {}, \"dur\": {}, \"args\": {{\"External "
        "id\": {}}}}}",
        step, Ts(ts_ns), Us(dur_ns), ++external_);
  }

  // The launch on the host, its flow, and the kernel on the GPU; returns the correlation.
  int64_t Kernel(std::string_view name, int64_t launch_ns, int64_t ts_ns, int64_t dur_ns,
                 int stream = 7, std::string_view extra_args = "") {
    const int64_t correlation = ++correlation_;
    text += fmt::format(
        ",\n  {{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": "
        "2910249, \"tid\": 2910249, \"ts\": {}, \"dur\": 4.1, \"args\": {{\"External id\": {}, "
        "\"cbid\": 211, \"correlation\": {}}}}}",
        Ts(launch_ns), external_, correlation);
    text += fmt::format(
        ",\n  {{\"ph\": \"s\", \"id\": {}, \"pid\": 2910249, \"tid\": 2910249, \"ts\": {}, "
        "\"cat\": "
        "\"ac2g\", \"name\": \"ac2g\"}}",
        correlation, Ts(launch_ns));
    text += fmt::format(
        ",\n  {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": 0, \"tid\": {}, "
        "\"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"device\": 0, \"stream\": {}, "
        "\"correlation\": {}, \"grid\": [132, 1, 1], \"block\": [256, 1, 1]{}}}}}",
        name, stream, Ts(ts_ns), Us(dur_ns), external_, stream, correlation, extra_args);
    return correlation;
  }

  // A compute kernel (a GEMM).
  int64_t Gemm(int64_t launch_ns, int64_t ts_ns, int64_t dur_ns, int stream = 7) {
    return Kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
                  launch_ns, ts_ns, dur_ns, stream);
  }

  // An NCCL kernel with c10d's arguments. `kernel` as NCCL names it
  // ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)").
  int64_t Collective(std::string_view kernel, std::string_view c10d_name, int64_t launch_ns,
                     int64_t ts_ns, int64_t dur_ns, double in_nelems, double out_nelems,
                     std::string_view dtype, int group_size, int stream = 20) {
    return Kernel(kernel, launch_ns, ts_ns, dur_ns, stream,
                  fmt::format(", \"Collective name\": \"{}\", \"In msg nelems\": {}, \"Out msg "
                              "nelems\": {}, \"Group size\": {}, \"dtype\": \"{}\", \"Process "
                              "Group Name\": \"0\", \"Process Group Description\": "
                              "\"default_pg\", \"Process Group Ranks\": \"[0, 1]\"",
                              c10d_name, in_nelems, out_nelems, group_size, dtype));
  }

  void Memcpy(int64_t ts_ns, int64_t dur_ns, int stream = 7) {
    text += fmt::format(
        ",\n  {{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> "
        "Device)\", \"pid\": 0, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"device\": 0, "
        "\"stream\": {}, \"correlation\": {}, \"bytes\": 4000}}}}",
        stream, Ts(ts_ns), Us(dur_ns), stream, ++correlation_);
  }

 private:
  int64_t base_ns_;
  int64_t external_ = 0;
  int64_t correlation_ = 0;
};

}  // namespace cmax::testing
