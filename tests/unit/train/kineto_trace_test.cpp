// The Kineto trace reader: the shapes of real traces (written from the reference's description
// of HTA's nccl_data.json.gz, and by the synthetic writer), HTA's classification of kernels, the
// nanosecond times, a stream read in pieces of any size, and traces cut short, corrupt, gzip'd.
#include "train/kineto_trace.hpp"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>

#include "support/kineto_writer.hpp"
#include "support/temp_dir.hpp"
#include "sys/gzip_file.hpp"

namespace cmax::train {
namespace {

// The reference's illustration of a kernel event (trimmed from HTA's A100 trace), with its
// host side: ProfilerStep, a cpu_op with nested arguments, the launch, the flow, metadata.
constexpr std::string_view kExcerpt = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA A100-PG509-200", "totalGlobalMem": 42297524224}],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2, "pg_count": 1,
    "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0, 1]}],
    "nccl_version": "2.17.1"},
  "traceEvents": [
  {"name": "process_labels", "ph": "M", "pid": 0, "args": {"labels": "GPU 0"}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 2910249, "tid": 2910249,
   "ts": 4458676416788.066, "dur": 222442.191, "args": {"External id": 1, "Record function id": 1, "Ev Idx": 7200}},
  {"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 2910249, "tid": 2910249,
   "ts": 4458676500000.5, "dur": 20.25, "args": {"Input Dims": [[[6637568]], [], [], []], "Input type": ["TensorList", "", "", ""], "Ev Idx": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 2910249, "tid": 2910249,
   "ts": 4458676500010.000, "dur": 5.0, "args": {"External id": 12945, "cbid": 211, "correlation": 60047}},
  {"ph": "s", "id": 60047, "pid": 2910249, "tid": 2910249, "ts": 4458676500010.000, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
   "pid": 0, "tid": 40, "ts": 4458677009853.422, "dur": 2636.669,
   "args": {"External id": 12945, "device": 0, "stream": 40, "correlation": 60047, "grid": [8, 1, 1], "block": [544, 1, 1],
    "Collective name": "allreduce", "In msg nelems": 6637568, "Out msg nelems": 6637568, "Group size": 2, "dtype": "Float",
    "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1]"}},
  {"ph": "f", "id": 60047, "pid": 0, "tid": 40, "ts": 4458677009853.422, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
   "pid": 0, "tid": 7, "ts": 4458677009000.000, "dur": 1000.5, "args": {"device": 0, "stream": 7, "correlation": 60046}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 7,
   "ts": 4458677052061.431, "dur": 5.088, "args": {"device": 0, "context": 1, "stream": 7, "correlation": 64014, "bytes": 4000}},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "nccl:all_reduce", "pid": 0, "tid": 40,
   "ts": 4458677009853.422, "dur": 2636.669, "args": {"External id": 12945}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 4458677060000.0, "dur": 3.0,
   "args": {"stream": 7, "correlation": 70000}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 2910249, "tid": 0, "ts": 4458677060000.0, "s": "t",
   "args": {"Total Allocated": 123, "Bytes": -8}}
  ],
  "traceName": "rank1.json", "displayTimeUnit": "ms", "baseTimeNanoseconds": 1700000000000000000
})json";

TEST(KinetoTrace, ReadsTheShapeOfAProfilerTrace) {
  StringByteSource input(kExcerpt);
  auto trace = ReadKinetoTrace(input);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->rank, 1);
  EXPECT_EQ(trace->world_size, 2);
  EXPECT_EQ(trace->events, 12U);
  EXPECT_FALSE(trace->ended_early);
  // Kernels and the memcpy; not the GPU annotation (no stream) nor the stream sync (a wait).
  ASSERT_EQ(trace->gpu.size(), 3U);
  EXPECT_EQ(trace->gpu[0].kind, KernelKind::kCommunication);
  EXPECT_EQ(trace->gpu[0].collective, CollectiveKind::kAllReduce);
  // Microseconds with nanosecond decimals, kept to the nanosecond.
  EXPECT_EQ(trace->gpu[0].start_ns, 4458677009853422);
  EXPECT_EQ(trace->gpu[0].end_ns, 4458677009853422 + 2636669);
  EXPECT_EQ(trace->gpu[0].correlation, 60047);
  EXPECT_EQ(trace->gpu[1].kind, KernelKind::kCompute);
  EXPECT_EQ(trace->gpu[1].end_ns - trace->gpu[1].start_ns, 1000500);
  EXPECT_EQ(trace->gpu[2].kind, KernelKind::kMemory);
  ASSERT_EQ(trace->collectives.size(), 1U);
  EXPECT_DOUBLE_EQ(*trace->collectives[0].bytes, 6637568.0 * 4);
  EXPECT_EQ(trace->collectives[0].group_size, 2);
  EXPECT_EQ(trace->collectives[0].group, "0");
  ASSERT_EQ(trace->steps.size(), 1U);
  EXPECT_EQ(trace->steps[0].step, 4);
  EXPECT_EQ(trace->steps[0].end_ns - trace->steps[0].start_ns, 222442191);
  ASSERT_EQ(trace->launches.size(), 1U);
  EXPECT_EQ(trace->launches[0].correlation, 60047);
  EXPECT_EQ(trace->bytes, kExcerpt.size());
}

// The reader holds one buffer: every token may be split between two reads.
TEST(KinetoTrace, ReadInPiecesOfAnySizeGivesTheSameTrace) {
  StringByteSource whole(kExcerpt);
  const auto expected = ReadKinetoTrace(whole);
  ASSERT_TRUE(expected);
  for (size_t piece : {1U, 2U, 3U, 7U, 64U, 4095U}) {
    StringByteSource input(kExcerpt, piece);
    auto trace = ReadKinetoTrace(input);
    ASSERT_TRUE(trace) << piece;
    ASSERT_EQ(trace->gpu.size(), expected->gpu.size()) << piece;
    for (size_t i = 0; i < trace->gpu.size(); ++i) {
      EXPECT_EQ(trace->gpu[i].start_ns, expected->gpu[i].start_ns) << piece;
      EXPECT_EQ(trace->gpu[i].end_ns, expected->gpu[i].end_ns) << piece;
      EXPECT_EQ(trace->gpu[i].kind, expected->gpu[i].kind) << piece;
    }
    EXPECT_EQ(trace->collectives.size(), 1U) << piece;
    EXPECT_EQ(trace->rank, 1) << piece;
  }
}

// A host event is skipped whole once its ph, cat and name show it is only counted: its
// arguments (brackets and quotes inside strings) are passed over, whatever comes after is read,
// and the fields that make an event matter are found in any order.
TEST(KinetoTrace, HostEventsAreSkippedWholeAndAnyKeyOrderIsRead) {
  constexpr std::string_view kText = R"json({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10.0, "dur": 5.0,
   "args": {"Input Dims": [[1, 2], []], "odd": "}]{[\"", "stream": 7, "nested": {"a": [{"b": "]"}]}}},
  {"name": "ProfilerStep#3", "ts": 100.0, "dur": 900.0, "cat": "user_annotation", "ph": "X"},
  {"args": {"stream": 7, "correlation": 5}, "dur": 2.5, "ts": 200.0, "name": "void gemm_kernel<128>()", "ph": "X", "cat": "kernel"},
  {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "ph": "X", "ts": 150.0, "dur": 1.0, "args": {"correlation": 5}},
  {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 5, "ts": 150.0},
  {"ph": "X", "cat": "python_function", "name": "train.py(12): step", "ts": 1.0, "dur": 2.0, "args": {"Python id": 4}}
  ]})json";
  for (size_t piece : {0U, 1U, 3U, 16U}) {
    StringByteSource input(kText, piece);
    auto trace = ReadKinetoTrace(input);
    ASSERT_TRUE(trace) << piece << ": " << trace.error().message;
    EXPECT_FALSE(trace->ended_early) << piece << ": " << trace->end_reason;
    EXPECT_EQ(trace->events, 6U) << piece;
    ASSERT_EQ(trace->gpu.size(), 1U) << piece;
    EXPECT_EQ(trace->gpu[0].start_ns, 200'000) << piece;
    EXPECT_EQ(trace->gpu[0].end_ns, 202'500) << piece;
    EXPECT_EQ(trace->gpu[0].kind, KernelKind::kCompute) << piece;
    ASSERT_EQ(trace->steps.size(), 1U) << piece;
    EXPECT_EQ(trace->steps[0].step, 3) << piece;
    ASSERT_EQ(trace->launches.size(), 1U) << piece;
    EXPECT_EQ(trace->launches[0].correlation, 5) << piece;
  }
}

TEST(KinetoTrace, ClassifiesKernelsByHtaRule) {
  const std::vector<std::pair<std::string_view, KernelKind>> cases = {
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       KernelKind::kCommunication},
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
       KernelKind::kCommunication},
      {"ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_bf16", KernelKind::kCommunication},
      {"void foo::ncclKernel_wrapper()", KernelKind::kCommunication},
      {"hipMemcpyAsync", KernelKind::kCommunication},  // HTA's rule: ^hip is communication
      {"Memcpy HtoD (Pinned -> Device)", KernelKind::kMemory},
      {"Memset (Device)", KernelKind::kMemory},
      {"dma_transfer", KernelKind::kMemory},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", KernelKind::kCompute},
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128>>(Flash_fwd_params)",
       KernelKind::kCompute},
      {"triton_poi_fused_add_mul_0", KernelKind::kCompute},
      {"Context Sync", KernelKind::kOther},
      {"Stream Wait Event", KernelKind::kOther},
      {"cudaLaunchKernel", KernelKind::kOther},
      {"void copy_kernel_Memcpy_like()", KernelKind::kOther},
  };
  for (const auto& [name, kind] : cases) EXPECT_EQ(ClassifyKernel(name), kind) << name;
}

TEST(KinetoTrace, NamesTheCollectiveFromC10dOrTheKernel) {
  EXPECT_EQ(CollectiveFromName("allreduce", ""), CollectiveKind::kAllReduce);
  EXPECT_EQ(CollectiveFromName("_allgather_base", ""), CollectiveKind::kAllGather);
  EXPECT_EQ(CollectiveFromName("allgather_into_tensor_coalesced", ""), CollectiveKind::kAllGather);
  EXPECT_EQ(CollectiveFromName("_reduce_scatter_base", ""), CollectiveKind::kReduceScatter);
  EXPECT_EQ(CollectiveFromName("all_to_allv", "ncclDevKernel_SendRecv"), CollectiveKind::kAllToAll);
  EXPECT_EQ(CollectiveFromName("", "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"),
            CollectiveKind::kSendRecv);
  EXPECT_EQ(CollectiveFromName("", "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL"),
            CollectiveKind::kReduceScatter);
  EXPECT_EQ(CollectiveFromName("", "ncclAllReduceRingLLKernel_sum_f32"),
            CollectiveKind::kAllReduce);
  EXPECT_EQ(CollectiveFromName("", "ncclDevKernel_Reduce_Sum_f32_RING_LL"),
            CollectiveKind::kReduce);
  EXPECT_EQ(CollectiveFromName("broadcast", ""), CollectiveKind::kBroadcast);
  EXPECT_EQ(CollectiveFromName("", "ncclDevKernel_Generic"), CollectiveKind::kOther);
  EXPECT_EQ(DtypeBytes("BFloat16"), 2);
  EXPECT_EQ(DtypeBytes("Float8_e4m3fn"), 1);
  EXPECT_EQ(DtypeBytes("Long"), 8);
  EXPECT_FALSE(DtypeBytes("Quaternion"));
}

TEST(KinetoTrace, TheEventsAloneAsAnArrayAreATraceToo) {
  StringByteSource input(
      R"([{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 10, "dur": 5, "args": {"stream": 7}}])");
  auto trace = ReadKinetoTrace(input);
  ASSERT_TRUE(trace) << trace.error().message;
  ASSERT_EQ(trace->gpu.size(), 1U);
  EXPECT_EQ(trace->gpu[0].end_ns, 15000);
  EXPECT_FALSE(trace->rank);
}

TEST(KinetoTrace, EventsWithMissingOrWrongFieldsAreLeftOutOrCounted) {
  StringByteSource input(R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "no_dur", "ts": 10, "args": {"stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "no_ts", "dur": 5, "args": {"stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "negative", "ts": 10, "dur": -5, "args": {"stream": 7}},
    {"ph": "X", "cat": "kernel", "name": 42, "ts": 10, "dur": 5, "args": {"stream": "7"}},
    {"ph": "X", "cat": "kernel", "name": "host_side", "ts": 10, "dur": 5, "args": {"stream": -1}},
    {"ph": "X", "cat": "kernel", "name": "string_times", "ts": "20.5", "dur": "1.25", "args": {"stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "huge", "ts": 1e300, "dur": 5, "args": {"stream": 7}},
    17, "a string", [1, 2], null
  ]})");
  auto trace = ReadKinetoTrace(input);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->skipped, 4U);     // no dur, a negative one, no ts, one no int64 of ns holds
  ASSERT_EQ(trace->gpu.size(), 2U);  // the number-named one (stream as a string); string times
  EXPECT_EQ(trace->gpu[0].kind, KernelKind::kCompute);  // no name: not communication
  EXPECT_EQ(trace->gpu[1].start_ns, 20500);
  EXPECT_EQ(trace->gpu[1].end_ns, 21750);
  EXPECT_EQ(trace->events, 7U);
}

TEST(KinetoTrace, ACutTraceIsReadUpToItsCutAndSaysSo) {
  testing::KinetoWriter w;
  w.Begin(0, 1);
  for (int i = 0; i < 50; ++i) w.Gemm(i * 1000000, i * 1000000 + 5000, 500000);
  w.End();
  const std::string whole = w.text;
  const size_t events_at = whole.find("\"traceEvents\"");
  ASSERT_NE(events_at, std::string::npos);
  size_t previous_gpu = 0;
  // Cut before its first event ends: nothing says it is a trace (below).
  const size_t first_event_end = whole.find("}}", events_at) + 2;
  for (size_t cut = first_event_end + 1; cut < whole.size() - 60; cut += 97) {
    StringByteSource input(std::string_view(whole).substr(0, cut));
    auto trace = ReadKinetoTrace(input);
    ASSERT_TRUE(trace) << cut << ": " << trace.error().message;
    EXPECT_TRUE(trace->ended_early) << cut;
    EXPECT_NE(trace->end_reason.find("cut off at byte " + std::to_string(cut)), std::string::npos)
        << trace->end_reason;
    EXPECT_GE(trace->gpu.size(), previous_gpu);  // never an event less for more bytes
    previous_gpu = trace->gpu.size();
  }
  EXPECT_GE(previous_gpu, 48U);
  // Cut before its events begin, or inside the first: not a trace.
  for (size_t cut : {events_at - 5, first_event_end - 3}) {
    StringByteSource head(std::string_view(whole).substr(0, cut));
    auto none = ReadKinetoTrace(head);
    ASSERT_FALSE(none) << cut;
    EXPECT_EQ(none.error().code, ErrorCode::kCorrupt);
  }
}

TEST(KinetoTrace, WhatIsNotATraceIsRefusedInWords) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"hello", "does not start with"},
      {R"({"schemaVersion": 1})", "no traceEvents"},
      {R"({"traceEvents": 7})", "not JSON"},
      {R"({"traceEvents" 7})", "not JSON"},
      {"[rank0]:2024-04-16 10:00:00,123 - root - INFO - Starting job", "not JSON"},
  };
  for (const auto& [text, words] : cases) {
    StringByteSource input(text);
    auto trace = ReadKinetoTrace(input);
    ASSERT_FALSE(trace) << text;
    EXPECT_NE(trace.error().message.find(words), std::string::npos) << trace.error().message;
  }
  // Garbage inside the events after good ones: those are kept.
  StringByteSource input(
      R"({"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 1, "args": {"stream": 7}}, }}}}]})");
  auto trace = ReadKinetoTrace(input);
  ASSERT_TRUE(trace);
  EXPECT_TRUE(trace->ended_early);
  EXPECT_EQ(trace->gpu.size(), 1U);
  EXPECT_NE(trace->end_reason.find("not JSON"), std::string::npos);
}

TEST(KinetoTrace, AStringLongerThanTheLimitStopsTheRead) {
  const std::string text = R"({"traceEvents": [{"ph": "M"}, {"ph": "X", "name": ")" +
                           std::string(5000, 'a') + R"(", "ts": 1}]})";
  StringByteSource input(text);
  auto trace = ReadKinetoTrace(input, {.max_token_bytes = 1000});
  ASSERT_TRUE(trace);
  EXPECT_TRUE(trace->ended_early);
  EXPECT_NE(trace->end_reason.find("longer than"), std::string::npos);
}

std::string Gzip(const std::string& text, const std::string& path) {
  gzFile file = gzopen(path.c_str(), "wb");
  gzwrite(file, text.data(), static_cast<unsigned>(text.size()));
  gzclose(file);
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// gzip or plain, told apart by their first bytes; a gzip file cut short or corrupted reads as far
// as it is good and says why it stopped.
TEST(GzipTrace, PlainGzipCutAndCorruptFiles) {
  testing::TempDir dir;
  testing::KinetoWriter w;
  w.Begin(3, 8);
  for (int i = 0; i < 2000; ++i) w.Gemm(i * 1000000, i * 1000000 + 5000, 500000 + i);
  w.End();
  const std::string plain_path = dir.Path() + "/rank3_trace.json";
  WriteFile(plain_path, w.text);
  const std::string gz = Gzip(w.text, dir.Path() + "/rank3_trace.json.gz");
  ASSERT_LT(gz.size(), w.text.size() / 4);

  for (const std::string& path : {plain_path, dir.Path() + "/rank3_trace.json.gz"}) {
    auto source = sys::OpenMaybeGzipFile(path);
    ASSERT_TRUE(source) << path;
    auto trace = ReadKinetoTrace(**source);
    ASSERT_TRUE(trace) << path;
    EXPECT_EQ(trace->gpu.size(), 2000U) << path;
    EXPECT_EQ(trace->rank, 3) << path;
    EXPECT_EQ(trace->bytes, w.text.size()) << path;
    EXPECT_FALSE(trace->ended_early) << path;
  }

  const std::string cut_path = dir.Path() + "/cut.json.gz";
  WriteFile(cut_path, gz.substr(0, gz.size() / 2));
  auto cut_source = sys::OpenMaybeGzipFile(cut_path);
  ASSERT_TRUE(cut_source);
  auto cut = ReadKinetoTrace(**cut_source);
  ASSERT_TRUE(cut) << cut.error().message;
  EXPECT_TRUE(cut->ended_early);
  EXPECT_NE(cut->end_reason.find("gzip: unexpected end of file"), std::string::npos)
      << cut->end_reason;
  EXPECT_GT(cut->gpu.size(), 100U);
  EXPECT_LT(cut->gpu.size(), 2000U);

  std::string corrupt = gz;
  for (size_t i = corrupt.size() / 2; i < corrupt.size() / 2 + 64; ++i) corrupt[i] ^= 0x5A;
  const std::string corrupt_path = dir.Path() + "/corrupt.json.gz";
  WriteFile(corrupt_path, corrupt);
  auto corrupt_source = sys::OpenMaybeGzipFile(corrupt_path);
  ASSERT_TRUE(corrupt_source);
  auto bad = ReadKinetoTrace(**corrupt_source);
  // Either zlib finds the damage (an early end, said so) or the damage makes bad JSON: both
  // stop the read with the reason, never a crash or a silent whole trace.
  ASSERT_TRUE(bad) << bad.error().message;
  EXPECT_TRUE(bad->ended_early);
  EXPECT_LT(bad->gpu.size(), 2000U);

  auto missing = sys::OpenMaybeGzipFile(dir.Path() + "/none.json.gz");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace cmax::train
