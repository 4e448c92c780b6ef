// A stand-in for perftest's `ib_write_bw`, for tests only: no InfiniBand is reachable from the
// build machines. It keeps perftest's shape where cmax depends on it: the server (no host
// argument) listens on -p PORT, says "Waiting for client to connect..." in perftest's banner and
// serves one client; the client (a host argument) connects over real TCP, or says perftest's
// "Couldn't connect to HOST:PORT"; both print the settings block and the --report_gbits table.
// What a real link would decide comes from the environment:
//   STANDIN_IB_DEVICES  devices this host has ("mlx5_0,mlx5_1"); another -d: perftest's error
//   STANDIN_IB_GBITS    the client's average per device ("mlx5_0=392.1,mlx5_1=180"; default 390)
//   STANDIN_IB_HANG     a device whose client connects and then never ends
#include <netdb.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <vector>

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

bool Listed(const std::string& list, const std::string& device) {
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? comma : comma - start);
    if (item == device || item.rfind(device + "=", 0) == 0) return true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return false;
}

double Figure(const std::string& device) {
  const std::string list = "," + Env("STANDIN_IB_GBITS");
  const size_t at = list.find("," + device + "=");
  if (at == std::string::npos) return 390;
  return std::strtod(list.c_str() + at + device.size() + 2, nullptr);
}

void Settings(const std::string& device) {
  std::printf(
      "---------------------------------------------------------------------------------------\n"
      "                    RDMA_Write BW Test\n"
      " Dual-port       : OFF\t\tDevice         : %s\n"
      " Number of qps   : 1\t\tTransport type : IB\n"
      " Connection type : RC\t\tUsing SRQ      : OFF\n"
      " Mtu             : 4096[B]\n"
      " Link type       : IB\n"
      "---------------------------------------------------------------------------------------\n",
      device.c_str());
}

void Table(double gbits) {
  std::printf(
      " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
      " 65536      5000             %.2f             %.2f\t\t   %.6f\n"
      "---------------------------------------------------------------------------------------\n",
      gbits + 0.2, gbits, gbits * 1e9 / 8 / 65536 / 1e6);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "mlx5_0";
  int port = 18515;
  std::string host;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "-d" || a == "-p" || a == "-D" || a == "-x") && i + 1 < argc) {
      if (a == "-d") device = argv[i + 1];
      if (a == "-p") port = std::atoi(argv[i + 1]);
      ++i;
    } else if (a[0] != '-') {
      host = a;
    }
  }
  if (!Listed(Env("STANDIN_IB_DEVICES"), device)) {
    std::fprintf(stderr, " IB device %s not found\n Unable to find the Infiniband/RoCE device\n",
                 device.c_str());
    return 1;
  }
  if (host.empty()) {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(s, 1) != 0) {
      std::fprintf(stderr, "Couldn't bind to port %d: %s\n", port, std::strerror(errno));
      return 1;
    }
    std::printf(
        "\n************************************\n* Waiting for client to connect... *\n"
        "************************************\n");
    std::fflush(stdout);
    const int c = ::accept(s, nullptr, nullptr);
    if (c < 0) return 1;
    char buf[64];
    const ssize_t n = ::read(c, buf, sizeof buf);  // the client's hello, or its end
    Settings(device);
    if (n > 0) Table(Figure(device));
    ::close(c);
    return n > 0 ? 0 : 1;
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  int c = -1;
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) == 0) {
    c = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(c, found->ai_addr, found->ai_addrlen) != 0) {
      ::close(c);
      c = -1;
    }
    ::freeaddrinfo(found);
  }
  Settings(device);
  if (c < 0) {
    std::fprintf(stderr,
                 "Couldn't connect to %s:%d\nUnable to open file descriptor for socket "
                 "connection Unable to init the socket connection\n",
                 host.c_str(), port);
    return 1;
  }
  if (Env("STANDIN_IB_HANG") == device) {
    for (;;) ::pause();
  }
  (void)!::write(c, "hello", 5);
  Table(Figure(device));
  ::close(c);
  return 0;
}
