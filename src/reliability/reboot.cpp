#include "reliability/reboot.hpp"

#include <fmt/format.h>
#include <optional>

#include "core/log.hpp"
#include "core/strings.hpp"
#include "sys/interrupt.hpp"

namespace cmax::reliability {

std::string RebootUndo(const std::string& node) {
  // Slurm brings the node back DOWN with cmax's reason (nextstate=DOWN); stopped before the
  // resume, cmax leaves it so.
  return fmt::format(
      "{} was asked to reboot and comes back out of service with the reason 'cmax: reboot "
      "timing'; cmax did not put it back. Before it reboots: scontrol cancel_reboot {}; once it "
      "is up: scontrol update nodename={} state=resume",
      node, ShellWord(node), ShellWord(node));
}

Result<RebootTiming> TimeReboot(remediate::Scheduler& scheduler, Clock& clock,
                                const std::string& node, Duration poll, Duration timeout,
                                const RebootHooks& hooks) {
  RebootTiming t;
  auto before = scheduler.BootTime(node);
  if (!before) return tl::unexpected(before.error());
  t.boot_before = *before;
  t.requested = clock.Now();
  const std::string undo = RebootUndo(node);
  // Until the node is back in service: a second Ctrl-C says what it leaves and how to undo it.
  std::optional<sys::LeftBehind> left(std::in_place, undo);
  auto asked = scheduler.Reboot(node, "cmax: reboot timing");
  if (!asked) return tl::unexpected(asked.error());
  const auto deadline =
      t.requested + std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  const auto stopping = [&hooks] { return hooks.stop && hooks.stop(); };
  // 1. A new boot time: the node went down and came back (a scheduler that does not answer
  // meanwhile is expected: the node, or its daemon, is restarting).
  while (!t.booted) {
    clock.Sleep(poll);
    if (stopping()) {
      t.failure = "stopped before the node came back";
      t.undo = undo;
      return t;
    }
    auto now = scheduler.BootTime(node);
    if (now && *now != t.boot_before) {
      t.booted = clock.Now() - t.requested;
      t.boot_after = *now;
    } else if (clock.Now() >= deadline) {
      t.failure = fmt::format("no new boot time within {}", FormatDuration(timeout));
      t.undo = undo;
      return t;
    }
  }
  // 2. Back in service (the reboot left it out with cmax's reason), then the GPUs.
  if (auto resumed = scheduler.Resume(node); !resumed) {
    log::Warn("{}: cannot put it back in service after the reboot: {}", node,
              resumed.error().message);
    t.undo = undo;
  } else {
    left.reset();
  }
  while (!t.gpu_ready) {
    auto answer = hooks.gpu_check();
    if (answer) {
      t.gpu_ready = clock.Now() - t.requested;
      t.gpu_output = *answer;
      break;
    }
    if (clock.Now() >= deadline) {
      t.failure = fmt::format("the GPU query did not work within {}: {}", FormatDuration(timeout),
                              answer.error().message);
      return t;
    }
    if (stopping()) {
      t.failure = "stopped before the GPUs answered";
      return t;
    }
    clock.Sleep(poll);
  }
  return t;
}

}  // namespace cmax::reliability
