#include "sys/process_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <sys/wait.h>

#include "core/strings.hpp"
#include "sys/file_system.hpp"
#include "sys/interrupt.hpp"

extern char** environ;

namespace cmax::sys {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// Ours with `add` applied: "KEY=VALUE" replaces or adds KEY, "KEY" alone removes it.
std::vector<std::string> BuildEnvironment(const std::vector<std::string>& add) {
  const auto name = [](std::string_view text) { return text.substr(0, text.find('=')); };
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const bool replaced = std::any_of(add.begin(), add.end(),
                                      [&](const std::string& a) { return name(a) == name(text); });
    if (!replaced) env.emplace_back(text);
  }
  for (const std::string& a : add) {
    if (a.find('=') != std::string::npos) env.push_back(a);
  }
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// In a forked child before exec: only async-signal-safe calls from here on.
void ResetChildSignals() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // exec keeps SIG_IGN; we ignore SIGPIPE ourselves and the child must not inherit that.
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
}

void WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    size -= static_cast<size_t>(n);
  }
}

class Pipe {
 public:
  Pipe() = default;
  ~Pipe() { Close(); }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  bool Open() { return ::pipe2(fds_.data(), O_CLOEXEC) == 0; }
  int Read() const { return fds_[0]; }
  int Write() const { return fds_[1]; }
  void CloseRead() { CloseOne(0); }
  void CloseWrite() { CloseOne(1); }
  void Close() {
    CloseOne(0);
    CloseOne(1);
  }

 private:
  void CloseOne(int i) {
    if (fds_[i] >= 0) ::close(fds_[i]);
    fds_[i] = -1;
  }
  std::array<int, 2> fds_{-1, -1};
};

struct Capture {
  int fd = -1;
  std::string* text = nullptr;
  bool* truncated = nullptr;
  size_t cap = 0;
  int stream = 1;
  const std::function<bool(int, std::string_view)>* on_output = nullptr;
  bool* stop = nullptr;  // set when on_output asks for a stop
};

// Reads what is available, at most max_reads times so that a writer as fast as we read cannot
// keep us from the timeout and interrupt checks; false at EOF or error (the caller closes it).
bool Drain(Capture& capture, int max_reads = 16) {
  char buffer[65536];
  for (int reads = 0; reads < max_reads; ++reads) {
    const ssize_t n = ::read(capture.fd, buffer, sizeof(buffer));
    if (n > 0) {
      const size_t room = capture.cap - std::min(capture.cap, capture.text->size());
      const size_t keep = std::min(room, static_cast<size_t>(n));
      capture.text->append(buffer, keep);
      if (keep < static_cast<size_t>(n)) *capture.truncated = true;
      if (capture.on_output != nullptr && *capture.on_output &&
          !(*capture.on_output)(capture.stream, std::string_view(buffer, static_cast<size_t>(n)))) {
        *capture.stop = true;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
  return true;
}

void SetNonBlocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int MillisUntil(SteadyTime now, SteadyTime when) {
  if (when <= now) return 0;
  return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(when - now).count());
}

}  // namespace

std::string ProcessResult::Describe() const {
  if (abandoned) return "stuck even after SIGKILL, left behind after " + FormatDuration(duration);
  if (timed_out) return "timed out after " + FormatDuration(duration);
  if (interrupted) return "interrupted";
  if (stopped) return "stopped as asked after " + FormatDuration(duration);
  if (signal != 0) return "killed by signal " + std::to_string(signal);
  return "exit " + std::to_string(exit_code);
}

Result<ProcessResult> PosixProcessRunner::Run(const ProcessSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return Fail(ErrorCode::kInvalidArgument, "no program to run");
  }
  if (spec.use_shell && spec.argv.size() != 1) {
    return Fail(ErrorCode::kInvalidArgument, "a shell command is one string");
  }
  std::vector<std::string> args =
      spec.use_shell ? std::vector<std::string>{"/bin/sh", "-c", spec.argv[0]} : spec.argv;
  std::vector<std::string> env = BuildEnvironment(spec.env_add);
  std::vector<char*> c_args = CStrings(args);
  std::vector<char*> c_env = CStrings(env);

  Pipe out, err, in, exec_report;
  if (!out.Open() || !err.Open() || !in.Open() || !exec_report.Open()) {
    return Fail(ErrorCode::kIo, "cannot create pipes: {}", std::strerror(errno));
  }
  const SteadyTime start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) return Fail(ErrorCode::kIo, "cannot fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ResetChildSignals();
    ::dup2(in.Read(), STDIN_FILENO);
    ::dup2(out.Write(), STDOUT_FILENO);
    ::dup2(err.Write(), STDERR_FILENO);
    if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) {
      const int e = errno;
      WriteAll(exec_report.Write(), &e, sizeof(e));
      ::_exit(127);
    }
    ::execvpe(c_args[0], c_args.data(), c_env.data());
    const int e = errno;
    WriteAll(exec_report.Write(), &e, sizeof(e));
    ::_exit(127);
  }
  // Both sides set the group so that a kill right after fork cannot miss the child.
  ::setpgid(pid, pid);
  out.CloseWrite();
  err.CloseWrite();
  in.CloseRead();
  exec_report.CloseWrite();

  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(exec_report.Read(), &exec_errno, sizeof(exec_errno));
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof(exec_errno))) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return Fail(ErrorCodeFromErrno(exec_errno), "cannot run {}: {}", args[0],
                std::strerror(exec_errno));
  }

  ProcessResult result;
  bool stop_asked = false;
  Capture captures[2] = {
      {out.Read(), &result.stdout_text, &result.stdout_truncated, spec.output_cap, 1,
       &spec.on_output, &stop_asked},
      {err.Read(), &result.stderr_text, &result.stderr_truncated, spec.output_cap, 2,
       &spec.on_output, &stop_asked},
  };
  SetNonBlocking(out.Read());
  SetNonBlocking(err.Read());
  bool open[2] = {true, true};
  size_t stdin_written = 0;
  bool stdin_open = spec.stdin_data.has_value();
  if (stdin_open) {
    SetNonBlocking(in.Write());
  } else {
    in.CloseWrite();
  }

  const SteadyTime deadline = start + spec.timeout;
  std::optional<SteadyTime> term_sent_at;
  std::optional<SteadyTime> kill_sent_at;
  bool kill_sent = false;
  int status = 0;
  bool reaped = false;
  while (true) {
    if (!reaped) reaped = ::waitpid(pid, &status, WNOHANG) == pid;
    if (reaped) {
      // What the child wrote before exiting is in the pipes; a grandchild that keeps them open
      // does not hold us up.
      for (int i = 0; i < 2; ++i) {
        if (open[i]) Drain(captures[i]);
      }
      break;
    }
    const SteadyTime now = std::chrono::steady_clock::now();
    if (!term_sent_at && now >= deadline) result.timed_out = true;
    if (!term_sent_at && !spec.runs_past_interrupt && Interrupted()) result.interrupted = true;
    if (!term_sent_at && !stop_asked && spec.keep_running && !spec.keep_running()) {
      stop_asked = true;
    }
    if (!term_sent_at && stop_asked && !result.timed_out && !result.interrupted) {
      result.stopped = true;
    }
    if (!term_sent_at && (result.timed_out || result.interrupted || result.stopped)) {
      ::kill(-pid, SIGTERM);
      term_sent_at = now;
    }
    if (term_sent_at && !kill_sent && now >= *term_sent_at + spec.kill_grace) {
      ::kill(-pid, SIGKILL);
      kill_sent = true;
      kill_sent_at = now;
    }
    if (kill_sent_at && now >= *kill_sent_at + spec.kill_grace + std::chrono::seconds(1)) {
      result.abandoned = true;
      break;
    }

    int wait_ms = 100;
    if (!term_sent_at) wait_ms = std::min(wait_ms, MillisUntil(now, deadline));
    if (term_sent_at && !kill_sent) {
      wait_ms = std::min(wait_ms, MillisUntil(now, *term_sent_at + spec.kill_grace));
    }
    pollfd fds[3];
    nfds_t count = 0;
    int index_of[3] = {-1, -1, -1};
    for (int i = 0; i < 2; ++i) {
      if (!open[i]) continue;
      index_of[count] = i;
      fds[count++] = pollfd{captures[i].fd, POLLIN, 0};
    }
    if (stdin_open) {
      index_of[count] = 2;
      fds[count++] = pollfd{in.Write(), POLLOUT, 0};
    }
    // With every pipe closed only the exit is left to notice: check often.
    if (count == 0) wait_ms = std::min(wait_ms, 2);
    const int ready = ::poll(fds, count, std::max(wait_ms, 0));
    if (ready < 0 && errno != EINTR) {
      const int poll_errno = errno;
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return Fail(ErrorCode::kIo, "waiting for {} failed: {}", args[0], std::strerror(poll_errno));
    }
    for (nfds_t k = 0; ready > 0 && k < count; ++k) {
      if (fds[k].revents == 0) continue;
      const int i = index_of[k];
      if (i < 2) {
        if (!Drain(captures[i])) {
          open[i] = false;
          if (i == 0) out.CloseRead();
          if (i == 1) err.CloseRead();
        }
        continue;
      }
      const std::string& data = *spec.stdin_data;
      const ssize_t n =
          ::write(in.Write(), data.data() + stdin_written, data.size() - stdin_written);
      if (n > 0) stdin_written += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || stdin_written == data.size()) {
        in.CloseWrite();
        stdin_open = false;
      }
    }
  }
  if (result.timed_out || result.interrupted || result.stopped) {
    ::kill(-pid, SIGKILL);  // stragglers in the group
  }
  result.duration = std::chrono::steady_clock::now() - start;
  if (reaped && WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (reaped && WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

Result<int> SpawnDaemon(const DaemonSpec& spec) {
  if (spec.argv.empty()) return Fail(ErrorCode::kInvalidArgument, "no program to start");
  std::vector<std::string> args = spec.argv;
  std::vector<std::string> env = BuildEnvironment(spec.env_add);
  std::vector<char*> c_args = CStrings(args);
  std::vector<char*> c_env = CStrings(env);
  Pipe report;
  if (!report.Open()) return Fail(ErrorCode::kIo, "cannot create a pipe: {}", std::strerror(errno));

  // Messages on the report pipe: {1, pid} from the middle process, {2, errno} on failure.
  struct Message {
    int kind;
    int value;
  };
  const pid_t middle = ::fork();
  if (middle < 0) return Fail(ErrorCode::kIo, "cannot fork: {}", std::strerror(errno));
  if (middle == 0) {
    ::setsid();
    const pid_t daemon = ::fork();
    if (daemon != 0) {
      const Message m = daemon > 0 ? Message{1, daemon} : Message{2, errno};
      WriteAll(report.Write(), &m, sizeof(m));
      ::_exit(0);
    }
    ResetChildSignals();
    // CLOEXEC: dup2 clears it on 0-2, and the originals must not leak into the daemon.
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int log_fd =
        ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (null_fd < 0 || log_fd < 0 || ::chdir(spec.cwd.c_str()) != 0) {
      const Message m{2, errno};
      WriteAll(report.Write(), &m, sizeof(m));
      ::_exit(127);
    }
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execvpe(c_args[0], c_args.data(), c_env.data());
    const Message m{2, errno};
    WriteAll(report.Write(), &m, sizeof(m));
    ::_exit(127);
  }
  report.CloseWrite();
  int status = 0;
  while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  int daemon_pid = -1;
  int failure = 0;
  Message m{};
  while (true) {
    const ssize_t n = ::read(report.Read(), &m, sizeof(m));
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof(m))) break;
    if (m.kind == 1) daemon_pid = m.value;
    if (m.kind == 2) failure = m.value;
  }
  if (failure != 0) {
    return Fail(ErrorCodeFromErrno(failure), "cannot start {}: {}", args[0],
                std::strerror(failure));
  }
  if (daemon_pid <= 0) return Fail(ErrorCode::kInternal, "cannot start {}", args[0]);
  return daemon_pid;
}

bool ProcessAlive(int pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  return ProcessStartTicks(pid).has_value();
}

Result<unsigned long long> ProcessStartTicks(int pid) {
  LocalFileSystem fs;
  auto stat = fs.ReadFile("/proc/" + std::to_string(pid) + "/stat", 1 << 16);
  if (!stat) return tl::unexpected(stat.error());
  // The command name in field 2 may hold spaces and ')': fields are counted after the last ')'.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) return Fail(ErrorCode::kCorrupt, "bad /proc stat for {}", pid);
  const auto fields = SplitFields(std::string_view(*stat).substr(close + 1));
  // fields[0] is field 3 (state); field 22 (starttime) is fields[19].
  if (fields.size() < 20) return Fail(ErrorCode::kCorrupt, "short /proc stat for {}", pid);
  if (fields[0] == "Z" || fields[0] == "X") {
    return Fail(ErrorCode::kNotFound, "process {} has exited", pid);
  }
  return std::stoull(std::string(fields[19]));
}

std::string FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return ::access(name.c_str(), X_OK) == 0 ? name : std::string();
  }
  const char* path = ::getenv("PATH");
  for (std::string_view dir : Split(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    if (dir.empty()) dir = ".";
    std::string candidate = std::string(dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return {};
}

}  // namespace cmax::sys
