// A base for stand-in schedulers in tests of code that only reads (observers, reboot timing):
// every call fails as "not used" unless a test overrides it, so an unexpected write shows up as
// an error instead of passing silently.
#pragma once

#include <string>
#include <vector>

#include "remediate/scheduler.hpp"

namespace cmax::testing {

class ReadOnlyScheduler : public remediate::Scheduler {
 public:
  Result<std::vector<remediate::SchedulerNode>> Nodes() override { return Unused(); }
  Result<std::vector<remediate::TakeOut>> CmaxTakeOuts() override { return Unused(); }
  Result<std::string> Drain(const std::string&, const std::string&) override { return Unused(); }
  Result<std::string> Resume(const std::string&) override { return Unused(); }
  Result<std::string> RequeueJobs(const std::string&) override { return Unused(); }
  Result<std::vector<std::string>> JobsOn(const std::string&) override { return Unused(); }
  Result<std::string> Reboot(const std::string&, const std::string&) override { return Unused(); }
  Result<std::string> BootTime(const std::string&) override { return Unused(); }
  Result<std::string> StartValidation(const std::string&,
                                      const remediate::ValidationSpec&) override {
    return Unused();
  }
  Result<remediate::ValidationStatus> PollValidation(const std::string&,
                                                     const std::string&) override {
    return Unused();
  }
  Result<std::string> EndValidation(const std::string&, bool, const std::string&) override {
    return Unused();
  }
  Result<std::string> PickSpare() override { return Unused(); }
  Result<std::string> SwapInSpare(const std::string&) override { return Unused(); }
  Result<std::string> ReturnSpare(const std::string&) override { return Unused(); }

 protected:
  static tl::unexpected<Error> Unused() {
    return Fail(ErrorCode::kInternal, "not used by the code under test");
  }
};

}  // namespace cmax::testing
