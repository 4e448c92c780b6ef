// Measures a running `cmax agent` from outside, as a user would see it:
//   latency: an Xid written to /dev/kmsg -> its condition in the store (polled every ~20 us);
//   storm:   N lines per second to /dev/kmsg with Xids among them for S seconds, then how many
//            Xids the agent counted (from its /metrics) against how many were written.
// Run by bench/agent.sh, which starts the agent. Needs root.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
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
  std::fprintf(stderr,
               "usage: agent_bench latency DB NODE COUNT INTERVAL_MS\n"
               "       agent_bench burst LINES\n"
               "       agent_bench storm LINES_PER_SECOND SECONDS XID_EVERY_N_LINES\n");
  return 2;
}
