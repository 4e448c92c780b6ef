// Start-up cost of a command, measured the same way for each: posix_spawn, then waitpid, N
// times in turn with the others (so that a noisy neighbour hits them alike). Prints the median
// and p90 wall time per start in milliseconds.
// Usage: spawn_bench RUNS -- CMD ARGS... [-- CMD ARGS...]...
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <vector>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s RUNS -- CMD ARGS... [-- CMD ARGS...]...\n", argv[0]);
    return 2;
  }
  const int runs = std::atoi(argv[1]);
  std::vector<std::vector<char*>> commands;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      commands.emplace_back();
      continue;
    }
    if (commands.empty()) return 2;
    commands.back().push_back(argv[i]);
  }
  if (runs <= 0 || commands.empty()) {
    std::fprintf(stderr, "%s: RUNS must be a positive number, and a command must follow --\n",
                 argv[0]);
    return 2;
  }
  for (auto& c : commands) {
    if (c.empty()) {
      std::fprintf(stderr, "%s: an empty command between two --\n", argv[0]);
      return 2;
    }
    c.push_back(nullptr);
  }
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::vector<double>> times(commands.size());
  for (int r = 0; r < runs; ++r) {
    for (size_t c = 0; c < commands.size(); ++c) {
      const auto start = std::chrono::steady_clock::now();
      pid_t pid = 0;
      if (posix_spawnp(&pid, commands[c][0], &quiet, nullptr, commands[c].data(), environ) != 0) {
        std::perror(commands[c][0]);
        return 1;
      }
      int status = 0;
      ::waitpid(pid, &status, 0);
      times[c].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  }
  for (size_t c = 0; c < commands.size(); ++c) {
    std::sort(times[c].begin(), times[c].end());
    std::string name;
    for (char* const* a = commands[c].data(); *a != nullptr; ++a) name += std::string(*a) + " ";
    std::printf("  %-44s median %6.2f ms  p90 %6.2f ms\n", name.c_str(),
                times[c][times[c].size() / 2], times[c][times[c].size() * 9 / 10]);
  }
  return 0;
}
