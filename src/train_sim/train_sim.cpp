// cmax-train-sim: a CPU stand-in for a data-parallel training job (named as one: it is not
// TorchTitan and trains no language model), over MPI. Where there is no GPU (CI, the namespace
// lab), `cmax train run`, `cmax train log` and `cmax train trace` run against this instead of
// TorchTitan: a real job whose figures are measured, not chosen.
//
// Each rank trains the same deep linear network (LAYERS dense layers of WIDTH x WIDTH floats,
// started near the identity) to match a fixed random "teacher" map on its own batches of BATCH
// rows, by gradient descent on the mean squared error: forward layer by layer, then backward
// from the last layer, each layer's weight gradient summed over the ranks by MPI_Iallreduce as
// soon as it is made, while the next layer's backward computes (as DDP's and FSDP's buckets
// overlap communication with compute), then every reduction waited for, the loss summed over
// the ranks, and the weights updated. So the communication a slow link adds shows as step time
// and, where compute no longer hides it, as exposed communication.
//
// Rank 0 prints TorchTitan's log lines ("Training starts at step 1", then "step: N  loss: ...
// memory: ...GiB(...%)  tps: ...  tflops: ..." for step 1, every --log-freq steps and the last,
// "Training completed"), with the figures measured: tps is rows (the job's "tokens") per second
// per rank, tflops the floating-point work of the step per rank, memory this process's peak
// resident set against the machine's memory. No mfu: a CPU's peak is not known here. With
// --trace-dir each rank writes DIR/rank<R>.trace.json, a PyTorch profiler (Kineto) trace of its
// first kMaxTracedSteps steps as HTA reads one (DIR is made where it is missing): each layer's
// compute and each reduction as device events on two streams (compute on 7, communication on 20,
// the reductions named ncclKernel_AllReduce_... so that the trace readers class them as
// communication), each with its host launch, and a ProfilerStep#N mark per step. A reduction's end
// is when this rank saw it complete (tested between blocks of compute rows, or waited for).
//
// SIGTERM or SIGINT to a rank ends the job after the step all ranks are in, with TorchTitan's
// words, exit 0 (mpirun itself answers SIGTERM by killing its ranks: a job stopped through
// mpirun writes no traces). Exit 2 for bad arguments, 1 when the loss is not finite.
//
//   mpirun -np 4 cmax-train-sim --steps 40 --layers 4 --width 256 --batch 64 --trace-dir t
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <sys/resource.h>
#include <sys/stat.h>
#include <vector>

namespace {

constexpr int kComputeStream = 7;
constexpr int kCommStream = 20;
constexpr int kDataBatches = 4;  // each rank's batches, cycled: the teacher map runs once each
// A trace keeps this many steps, as a profiler's schedule would: its events are held in memory
// until the end, and the log's peak memory would count them.
constexpr int64_t kMaxTracedSteps = 200;

struct Options {
  int64_t steps = 30;
  int layers = 4;
  int width = 256;
  int batch = 64;
  double lr = 0.05;
  int64_t log_freq = 10;
  std::string trace_dir;
  uint64_t seed = 1;
};

volatile sig_atomic_t g_stop = 0;
void OnStop(int /*signal*/) {
  g_stop = 1;
}

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::optional<int64_t> Whole(const char* text, int64_t low, int64_t high) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high) return {};
  return value;
}

void Usage() {
  std::fprintf(stderr,
               "usage: cmax-train-sim [--steps N] [--layers L] [--width D] [--batch B] [--lr X]\n"
               "                      [--log-freq N] [--seed N] [--trace-dir DIR]\n");
}

std::optional<Options> ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) return std::nullopt;
    const char* value = argv[++i];
    std::optional<int64_t> n;
    if (flag == "--steps") {
      n = Whole(value, 1, 10000000);
      if (n) o.steps = *n;
    } else if (flag == "--layers") {
      n = Whole(value, 1, 64);
      if (n) o.layers = static_cast<int>(*n);
    } else if (flag == "--width") {
      n = Whole(value, 2, 4096);
      if (n) o.width = static_cast<int>(*n);
    } else if (flag == "--batch") {
      n = Whole(value, 1, 65536);
      if (n) o.batch = static_cast<int>(*n);
    } else if (flag == "--log-freq") {
      n = Whole(value, 1, 10000000);
      if (n) o.log_freq = *n;
    } else if (flag == "--seed") {
      n = Whole(value, 0, INT32_MAX);
      if (n) o.seed = static_cast<uint64_t>(*n);
    } else if (flag == "--lr") {
      char* end = nullptr;
      o.lr = std::strtod(value, &end);
      if (end == value || *end != '\0' || !(o.lr > 0 && o.lr < 10)) return std::nullopt;
      continue;
    } else if (flag == "--trace-dir") {
      o.trace_dir = value;
      if (o.trace_dir.empty()) return std::nullopt;
      continue;
    } else {
      return std::nullopt;
    }
    if (!n) return std::nullopt;
  }
  return o;
}

// What a trace keeps of one device event or host launch.
struct TraceEvent {
  bool communication = false;
  std::string name;
  std::string dtype;  // a reduction's
  int64_t launch_ns = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // 0: not yet seen complete
  int64_t elements = 0;
  int64_t correlation = 0;
};

struct StepSpan {
  int64_t step = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// The reductions in flight and the events this rank records.
class Recorder {
 public:
  explicit Recorder(bool tracing) : tracing_(tracing), keep_(tracing) {}
  // Whether this step's events are kept (a trace's first kMaxTracedSteps steps).
  void KeepStep(int64_t step) { keep_ = tracing_ && step <= kMaxTracedSteps; }

  void Compute(std::string name, int64_t start_ns, int64_t end_ns) {
    if (!keep_) return;
    events_.push_back({.name = std::move(name),
                       .launch_ns = start_ns,
                       .start_ns = start_ns,
                       .end_ns = end_ns,
                       .correlation = ++correlation_});
  }
  // A reduction just posted (`dtype` as the trace names it); its end is set when it is seen
  // complete.
  void Posted(MPI_Request request, const char* name, const char* dtype, int64_t elements,
              int64_t at_ns) {
    pending_.push_back({request, keep_ ? events_.size() : kNoEvent});
    if (!keep_) return;
    events_.push_back({.communication = true,
                       .name = name,
                       .dtype = dtype,
                       .launch_ns = at_ns,
                       .start_ns = at_ns,
                       .elements = elements,
                       .correlation = ++correlation_});
  }
  // Tests the reductions in flight (which is also what lets MPI move them on).
  void Progress() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      if (done == 0) {
        ++it;
        continue;
      }
      Ended(it->event, NowNs());
      it = pending_.erase(it);
    }
  }
  // Waits for every reduction in flight, each one's end as it is seen.
  void WaitAll() {
    while (!pending_.empty()) {
      std::vector<MPI_Request> requests;
      requests.reserve(pending_.size());
      for (const Pending& p : pending_) requests.push_back(p.request);
      int index = MPI_UNDEFINED;
      MPI_Waitany(static_cast<int>(requests.size()), requests.data(), &index, MPI_STATUS_IGNORE);
      if (index == MPI_UNDEFINED) break;
      Ended(pending_[static_cast<size_t>(index)].event, NowNs());
      pending_.erase(pending_.begin() + index);
    }
  }
  void Step(int64_t step, int64_t start_ns, int64_t end_ns) {
    if (keep_) steps_.push_back({step, start_ns, end_ns});
  }
  // Kineto's JSON, as a PyTorch profiler trace of these steps on "GPU 0" would be.
  bool Write(const std::string& path, int rank, int world) const {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) return false;
    const int pid = static_cast<int>(getpid());
    const auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
    std::fprintf(f,
                 "{\"schemaVersion\": 1, \"traceName\": \"cmax-train-sim (a CPU stand-in for a "
                 "training job)\", \"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": 0,\n"
                 "\"distributedInfo\": {\"backend\": \"mpi\", \"rank\": %d, \"world_size\": %d},\n"
                 "\"traceEvents\": [\n"
                 "{\"name\": \"process_labels\", \"ph\": \"M\", \"pid\": 0, \"args\": "
                 "{\"labels\": \"GPU 0 (cmax-train-sim: this CPU)\"}}",
                 rank, world);
    for (const StepSpan& s : steps_) {
      std::fprintf(f,
                   ",\n{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
                   "\"ProfilerStep#%lld\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f}",
                   static_cast<long long>(s.step), pid, pid, us(s.start_ns),
                   us(s.end_ns - s.start_ns));
    }
    for (const TraceEvent& e : events_) {
      if (e.end_ns == 0) continue;  // never seen complete: the job stopped first
      const long long id = e.correlation;
      std::fprintf(f,
                   ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                   "\"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": 0.001, \"args\": "
                   "{\"correlation\": %lld}}",
                   pid, pid, us(e.launch_ns), id);
      std::fprintf(f,
                   ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, "
                   "\"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"device\": 0, "
                   "\"stream\": %d, \"correlation\": %lld",
                   e.name.c_str(), e.communication ? kCommStream : kComputeStream, us(e.start_ns),
                   us(e.end_ns - e.start_ns), e.communication ? kCommStream : kComputeStream, id);
      if (e.communication) {
        std::fprintf(f,
                     ", \"Collective name\": \"allreduce\", \"In msg nelems\": %lld, "
                     "\"Out msg nelems\": %lld, \"Group size\": %d, \"dtype\": \"%s\"",
                     static_cast<long long>(e.elements), static_cast<long long>(e.elements), world,
                     e.dtype.c_str());
      }
      std::fprintf(f, "}}");
    }
    std::fprintf(f, "\n]}\n");
    return std::fclose(f) == 0;
  }

 private:
  void Ended(size_t event, int64_t at_ns) {
    if (event != kNoEvent) events_[event].end_ns = at_ns;
  }
  static constexpr size_t kNoEvent = SIZE_MAX;
  struct Pending {
    MPI_Request request;
    size_t event;
  };
  bool tracing_;
  bool keep_;
  int64_t correlation_ = 0;
  std::vector<Pending> pending_;
  std::vector<TraceEvent> events_;
  std::vector<StepSpan> steps_;
};

using Matrix = std::vector<float>;  // row-major

// out (m x n) = a (m x k) . b (k x n); progress every few rows.
void MatMul(const Matrix& a, const Matrix& b, Matrix& out, int m, int k, int n,
            Recorder& recorder) {
  std::fill(out.begin(), out.end(), 0.0F);
  for (int i = 0; i < m; ++i) {
    float* row = &out[static_cast<size_t>(i) * n];
    for (int p = 0; p < k; ++p) {
      const float x = a[static_cast<size_t>(i) * k + p];
      const float* brow = &b[static_cast<size_t>(p) * n];
      for (int j = 0; j < n; ++j) row[j] += x * brow[j];
    }
    if (i % 8 == 7) recorder.Progress();
  }
}

// out (k x n) = a^T . g, a being m x k and g m x n: a weight's gradient.
void MatMulTransposedA(const Matrix& a, const Matrix& g, Matrix& out, int m, int k, int n,
                       Recorder& recorder) {
  std::fill(out.begin(), out.end(), 0.0F);
  for (int i = 0; i < m; ++i) {
    const float* grow = &g[static_cast<size_t>(i) * n];
    for (int p = 0; p < k; ++p) {
      const float x = a[static_cast<size_t>(i) * k + p];
      float* orow = &out[static_cast<size_t>(p) * n];
      for (int j = 0; j < n; ++j) orow[j] += x * grow[j];
    }
    if (i % 4 == 3) recorder.Progress();
  }
}

// out (m x k) = g . w^T, g being m x n and w k x n: the gradient passed to the layer below.
void MatMulTransposedB(const Matrix& g, const Matrix& w, Matrix& out, int m, int n, int k,
                       Recorder& recorder) {
  for (int i = 0; i < m; ++i) {
    const float* grow = &g[static_cast<size_t>(i) * n];
    for (int p = 0; p < k; ++p) {
      const float* wrow = &w[static_cast<size_t>(p) * n];
      float sum = 0;
      for (int j = 0; j < n; ++j) sum += grow[j] * wrow[j];
      out[static_cast<size_t>(i) * k + p] = sum;
    }
    if (i % 8 == 7) recorder.Progress();
  }
}

// TorchTitan's logger's prefix, with this machine's time.
void LogLine(const std::string& message) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  std::tm tm{};
  gmtime_r(&ts.tv_sec, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  std::printf("[titan] %s,%03ld - root - INFO - %s\n", when, ts.tv_nsec / 1000000, message.c_str());
  std::fflush(stdout);
}

std::string Format(const char* format, auto... values) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, format, values...);
  return buffer;
}

// Peak resident set in GiB, and its share of this machine's memory.
std::pair<double, double> PeakMemory() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double gib = static_cast<double>(usage.ru_maxrss) / (1024.0 * 1024.0);
  const double pages = static_cast<double>(sysconf(_SC_PHYS_PAGES));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double total_gib = pages * page / (1024.0 * 1024.0 * 1024.0);
  return {gib, total_gib > 0 ? 100.0 * gib / total_gib : 0.0};
}

int Train(const Options& options, int rank, int world) {
  const int width = options.width;
  const int rows = options.batch;
  const int depth = options.layers;
  const size_t weights = static_cast<size_t>(width) * width;
  const size_t activations = static_cast<size_t>(rows) * width;
  const auto at = [](int index) { return static_cast<size_t>(index); };
  std::mt19937_64 shared(options.seed);  // the same on every rank
  std::mt19937_64 own(options.seed * 1000003 + static_cast<uint64_t>(rank) + 1);  // its data
  std::normal_distribution<float> normal(0.0F, 1.0F);
  const float spread = 1.0F / std::sqrt(static_cast<float>(width));

  // The teacher map the network learns: the identity and a random part. Each weight starts at
  // the identity and a smaller random part, the same on every rank.
  Matrix teacher(weights);
  for (size_t i = 0; i < weights; ++i) teacher[i] = 0.5F * spread * normal(shared);
  for (int i = 0; i < width; ++i) teacher[at(i) * width + i] += 1.0F;
  std::vector<Matrix> layers(at(depth), Matrix(weights));
  for (Matrix& layer : layers) {
    for (size_t i = 0; i < weights; ++i) layer[i] = 0.05F * spread * normal(shared);
    for (int i = 0; i < width; ++i) layer[at(i) * width + i] += 1.0F;
  }
  Recorder recorder(!options.trace_dir.empty());
  std::vector<Matrix> inputs(kDataBatches, Matrix(activations));
  std::vector<Matrix> targets(kDataBatches, Matrix(activations));
  for (int batch = 0; batch < kDataBatches; ++batch) {
    for (float& x : inputs[at(batch)]) x = normal(own);
    MatMul(inputs[at(batch)], teacher, targets[at(batch)], rows, width, width, recorder);
  }
  std::vector<Matrix> acts(at(depth) + 1, Matrix(activations));  // each layer's input, the output
  std::vector<Matrix> grads(at(depth), Matrix(weights));
  Matrix grad_out(activations);  // the loss's gradient by the current layer's output
  Matrix grad_in(activations);   // ... by its input: the layer below's output
  // Forward 2 r w^2 a layer, each weight's gradient 2 r w^2, each gradient passed below (every
  // layer but the first) 2 r w^2.
  const double flops_per_step =
      2.0 * rows * static_cast<double>(width) * width * (3.0 * depth - 1.0);

  if (rank == 0) {
    LogLine(
        Format("Training starts at step 1, with local batch size %d, global batch size %d, "
               "total steps %lld (cmax-train-sim, a CPU stand-in for a training job)",
               rows, rows * world, static_cast<long long>(options.steps)));
  }
  int64_t logged_at_ns = NowNs();
  int64_t logged_step = 0;
  bool stopped = false;
  for (int64_t step = 1; step <= options.steps; ++step) {
    recorder.KeepStep(step);
    const int64_t step_start = NowNs();
    const Matrix& input = inputs[static_cast<size_t>((step - 1) % kDataBatches)];
    const Matrix& target = targets[static_cast<size_t>((step - 1) % kDataBatches)];
    acts[0] = input;
    for (int l = 0; l < depth; ++l) {
      const int64_t t0 = NowNs();
      MatMul(acts[at(l)], layers[at(l)], acts[at(l) + 1], rows, width, width, recorder);
      recorder.Compute(Format("cmax_train_sim_gemm_forward_layer%d", l), t0, NowNs());
    }
    // The loss: the mean over rows of the squared error; grad_out its gradient by the output.
    double loss = 0;
    const Matrix& out = acts[at(depth)];
    for (size_t i = 0; i < activations; ++i) {
      const float err = out[i] - target[i];
      loss += static_cast<double>(err) * err;
      grad_out[i] = 2.0F * err / static_cast<float>(rows);
    }
    loss /= rows;
    for (int l = depth - 1; l >= 0; --l) {
      const int64_t t0 = NowNs();
      MatMulTransposedA(acts[at(l)], grad_out, grads[at(l)], rows, width, width, recorder);
      if (l > 0) {
        MatMulTransposedB(grad_out, layers[at(l)], grad_in, rows, width, width, recorder);
      }
      recorder.Compute(Format("cmax_train_sim_gemm_backward_layer%d", l), t0, NowNs());
      MPI_Request request = MPI_REQUEST_NULL;
      MPI_Iallreduce(MPI_IN_PLACE, grads[at(l)].data(), static_cast<int>(weights), MPI_FLOAT,
                     MPI_SUM, MPI_COMM_WORLD, &request);
      recorder.Posted(request, "ncclKernel_AllReduce_Sum_float (cmax-train-sim: a gradient)",
                      "Float", static_cast<int64_t>(weights), NowNs());
      if (l > 0) std::swap(grad_out, grad_in);
    }
    recorder.WaitAll();
    // The loss over the ranks, and whether any was asked to stop: every rank ends together.
    double sums[2] = {loss, g_stop != 0 ? 1.0 : 0.0};
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request);
    recorder.Posted(request, "ncclKernel_AllReduce_Sum_double (cmax-train-sim: the loss)", "Double",
                    2, NowNs());
    recorder.WaitAll();
    const double mean_loss = sums[0] / world;
    const int64_t t0 = NowNs();
    const auto rate = static_cast<float>(options.lr / world);  // the mean of the ranks' gradients
    for (int l = 0; l < depth; ++l) {
      float* weight = layers[at(l)].data();
      const float* grad = grads[at(l)].data();
      for (size_t i = 0; i < weights; ++i) weight[i] -= rate * grad[i];
    }
    const int64_t step_end = NowNs();
    recorder.Compute("cmax_train_sim_optimizer_step", t0, step_end);
    recorder.Step(step, step_start, step_end);
    stopped = sums[1] > 0;
    const bool last = step == options.steps || stopped;
    if (rank == 0 && (step == 1 || step % options.log_freq == 0 || last)) {
      const double seconds = static_cast<double>(step_end - logged_at_ns) / 1e9;
      const auto steps_since = static_cast<double>(step - logged_step);
      const auto [gib, pct] = PeakMemory();
      LogLine(Format("step: %lld  loss: %.4f  memory: %.2fGiB(%.2f%%)  tps: %.0f  tflops: %.4f",
                     static_cast<long long>(step), mean_loss, gib, pct,
                     rows * steps_since / seconds, flops_per_step * steps_since / seconds / 1e12));
      logged_at_ns = step_end;
      logged_step = step;
    }
    if (!std::isfinite(mean_loss)) {
      if (rank == 0) std::fprintf(stderr, "cmax-train-sim: the loss is %f\n", mean_loss);
      return 1;
    }
    if (stopped) {
      if (rank == 0) LogLine("Received a stop signal: stopping after this step");
      break;
    }
  }
  if (!options.trace_dir.empty()) {
    // The folder is made where it is missing (every rank may try: one makes it).
    if (::mkdir(options.trace_dir.c_str(), 0755) != 0 && errno != EEXIST) {
      std::fprintf(stderr, "cmax-train-sim: cannot make %s: %s\n", options.trace_dir.c_str(),
                   std::strerror(errno));
      return 1;
    }
    const std::string path = options.trace_dir + "/rank" + std::to_string(rank) + ".trace.json";
    if (!recorder.Write(path, rank, world)) {
      std::fprintf(stderr, "cmax-train-sim: cannot write %s: %s\n", path.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  if (rank == 0 && !stopped) LogLine("Training completed");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::signal(SIGTERM, OnStop);
  std::signal(SIGINT, OnStop);
  int rank = 0;
  int world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const std::optional<Options> options = ParseOptions(argc, argv);
  if (!options) {
    if (rank == 0) Usage();
    MPI_Finalize();
    return 2;
  }
  const int code = Train(*options, rank, world);
  MPI_Finalize();
  return code;
}
