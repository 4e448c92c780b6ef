// serve-sim in a thread of the test, on a free loopback port: the simulated inference server
// (a stand-in) that end-to-end tests drive cmax's load engine against.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "endpoint/sim_server.hpp"

namespace cmax::testing {

class SimFixture {
 public:
  explicit SimFixture(const endpoint::SimConfig& config = {}) {
    auto server = endpoint::SimServer::Listen("127.0.0.1:0", config);
    if (!server) return;
    server_ = std::move(*server);
    thread_ = std::thread([this] { (void)server_->Run([this] { return stop_.load(); }); });
  }
  ~SimFixture() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  SimFixture(const SimFixture&) = delete;
  SimFixture& operator=(const SimFixture&) = delete;

  bool Up() const { return server_ != nullptr; }
  std::string Url(const std::string& path = "/v1/chat/completions") const {
    return "http://127.0.0.1:" + std::to_string(server_->Port()) + path;
  }
  // Only after Stop: the server's counters are its own thread's.
  endpoint::SimStats Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return server_->Stats();
  }

 private:
  std::unique_ptr<endpoint::SimServer> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace cmax::testing
