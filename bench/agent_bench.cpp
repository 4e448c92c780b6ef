// Measures a running `cmax agent` from outside, as a user would see it:
//   latency: an Xid written to /dev/kmsg -> its condition in the store (polled every ~20 us);
//   storm:   N lines per second to /dev/kmsg with Xids among them for S seconds, then how many
//            Xids the agent counted (from its /metrics) against how many were written.
// Run by bench/agent.sh, which starts the agent. Needs root.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <vector>

#include "store/sqlite.hpp"

namespace {

using Clock = std::chrono::steady_clock;

bool Write(int fd, const std::string& line) {
  const std::string record = line + "\n";
  return ::write(fd, record.data(), record.size()) == static_cast<ssize_t>(record.size());
}

int Latency(const std::string& db_path, const std::string& node, int count, int interval_ms) {
  auto db = cmax::store::Database::Open(db_path, false, true, 1000);
  if (!db) {
    std::fprintf(stderr, "%s\n", db.error().message.c_str());
    return 1;
  }
  auto query = db->Prepare("SELECT count FROM node_conditions WHERE node = ? AND key = ?");
  if (!query) {
    std::fprintf(stderr, "%s\n", query.error().message.c_str());
    return 1;
  }
  const int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) {
    // A new GPU address each time: each Xid opens a new condition row.
    char pci[32];
    std::snprintf(pci, sizeof(pci), "%04x:be:00", i);
    const std::string key = std::string("xid/") + pci + "/79";
    const auto t0 = Clock::now();
    if (!Write(fd, std::string("<3>NVRM: Xid (PCI:") + pci + "): 79, pid=1, name=latency, bench")) {
      std::perror("write /dev/kmsg");
      return 1;
    }
    bool stored = false;
    while (!stored && Clock::now() - t0 < std::chrono::seconds(5)) {
      query->Bind(1, std::string_view(node));
      query->Bind(2, std::string_view(key));
      auto row = query->Step();
      stored = row && *row;
      query->Reset();
      if (!stored) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    if (!stored) {
      std::fprintf(stderr, "Xid %d never reached the store\n", i);
      return 1;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  }
  ::close(fd);
  std::sort(ms.begin(), ms.end());
  auto q = [&](double p) {
    return ms[static_cast<size_t>(p * static_cast<double>(ms.size() - 1))];
  };
  std::printf(
      "latency kmsg -> stored condition over %d Xids: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max "
      "%.3f ms\n",
      count, q(0.5), q(0.9), q(0.99), ms.back());
  return 0;
}

int Storm(int lines_per_second, int seconds, int xid_every) {
  const int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  const auto start = Clock::now();
  long long written = 0;
  long long xids = 0;
  const long long total = static_cast<long long>(lines_per_second) * seconds;
  while (written < total) {
    // Paced in 1 ms slices so the rate is what was asked for, not what the CPU allows.
    const auto due = start + std::chrono::microseconds(written * 1000000LL / lines_per_second);
    if (Clock::now() < due) std::this_thread::sleep_until(due);
    for (int i = 0; i < lines_per_second / 1000 && written < total; ++i, ++written) {
      if (written % xid_every == 0) {
        Write(fd, "<3>NVRM: Xid (PCI:0000:ab:00): 31, pid=1, name=storm, MMU Fault");
        ++xids;
      } else {
        Write(fd, "<6>storm filler line " + std::to_string(written));
      }
    }
  }
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  ::close(fd);
  std::printf("storm: wrote %lld lines (%lld Xid 31 on 0000:ab:00) in %.2f s = %.0f lines/s\n",
              written, xids, took, static_cast<double>(written) / took);
  return 0;
}

// GET http://127.0.0.1:port/metrics and the sum of the samples whose line starts with prefix.
double MetricSum(int port, const std::string& prefix) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  const std::string request =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  (void)::write(fd, request.data(), request.size());
  std::string response;
  char buffer[65536];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0)
    response.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  double sum = 0;
  size_t pos = 0;
  while ((pos = response.find("\n" + prefix, pos)) != std::string::npos) {
    const size_t space = response.find(' ', response.find('}', pos + 1));
    sum += std::strtod(response.c_str() + space + 1, nullptr);
    pos += 1;
  }
  return sum;
}

// One Xid at a time to /dev/kmsg; each daemon's counter polled until it moves.
int SideBySide(int cmax_port, int npd_port, int count, int interval_ms) {
  const std::string cmax_metric = "cmax_xid_total{";
  const std::string npd_metric = "problem_counter{reason=\"XidError\"";
  const int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  std::vector<double> cmax_ms, npd_ms;
  for (int i = 0; i < count; ++i) {
    const double cmax_before = MetricSum(cmax_port, cmax_metric);
    const double npd_before = MetricSum(npd_port, npd_metric);
    char pci[32];
    std::snprintf(pci, sizeof(pci), "%04x:bf:00", i);
    const auto t0 = Clock::now();
    Write(fd, std::string("<3>NVRM: Xid (PCI:") + pci + "): 79, pid=1, name=side, bench");
    double cmax_seen = -1, npd_seen = -1;
    // Each poll is one HTTP request (about 0.1 ms); who goes first alternates, so neither
    // daemon is always measured after the other's request.
    auto poll = [&](int port, const std::string& metric, double before, double& seen) {
      const double elapsed = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (seen < 0 && MetricSum(port, metric) > before) seen = elapsed;
    };
    while ((cmax_seen < 0 || npd_seen < 0) && Clock::now() - t0 < std::chrono::seconds(5)) {
      if (i % 2 == 0) {
        poll(cmax_port, cmax_metric, cmax_before, cmax_seen);
        poll(npd_port, npd_metric, npd_before, npd_seen);
      } else {
        poll(npd_port, npd_metric, npd_before, npd_seen);
        poll(cmax_port, cmax_metric, cmax_before, cmax_seen);
      }
    }
    if (cmax_seen < 0 || npd_seen < 0) {
      std::fprintf(stderr, "Xid %d: not seen by %s\n", i, cmax_seen < 0 ? "cmax" : "npd");
      return 1;
    }
    cmax_ms.push_back(cmax_seen);
    npd_ms.push_back(npd_seen);
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  }
  ::close(fd);
  for (auto* v : {&cmax_ms, &npd_ms}) std::sort(v->begin(), v->end());
  auto q = [](const std::vector<double>& v, double p) {
    return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
  };
  for (const auto& [name, v] :
       {std::pair<const char*, std::vector<double>&>{"cmax agent", cmax_ms},
        std::pair<const char*, std::vector<double>&>{"node-problem-detector", npd_ms}}) {
    std::printf(
        "%-22s kmsg -> counter on /metrics over %d Xids: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, "
        "max %.2f ms\n",
        name, count, q(v, 0.5), q(v, 0.9), q(v, 0.99), v.back());
  }
  return 0;
}

// As fast as the CPU allows: to outrun a reader that is not reading.
int Burst(int lines) {
  const int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  for (int i = 0; i < lines; ++i) Write(fd, "<6>burst line " + std::to_string(i));
  ::close(fd);
  std::printf("burst: wrote %d lines\n", lines);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 6 && std::strcmp(argv[1], "latency") == 0) {
    return Latency(argv[2], argv[3], std::atoi(argv[4]), std::atoi(argv[5]));
  }
  if (argc >= 5 && std::strcmp(argv[1], "storm") == 0) {
    return Storm(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]));
  }
  if (argc >= 3 && std::strcmp(argv[1], "burst") == 0) return Burst(std::atoi(argv[2]));
  if (argc >= 6 && std::strcmp(argv[1], "side-by-side") == 0) {
    return SideBySide(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]),
                      std::atoi(argv[5]));
  }
  std::fprintf(
      stderr,
      "usage: agent_bench latency DB NODE COUNT INTERVAL_MS\n"
      "       agent_bench burst LINES\n"
      "       agent_bench side-by-side CMAX_METRICS_PORT NPD_METRICS_PORT COUNT INTERVAL_MS\n"
      "       agent_bench storm LINES_PER_SECOND SECONDS XID_EVERY_N_LINES\n");
  return 2;
}
