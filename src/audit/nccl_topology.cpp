#include "audit/nccl_topology.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <vector>

#include "core/sha256.hpp"
#include "core/strings.hpp"
#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

// NCCL's own reader (src/graph/xml.cc) is not a general XML parser: between elements it takes
// only spaces and line ends, a name runs to a space, '>', '/' or a line end, attributes follow
// one space each, values are in double quotes (older versions run a single-quoted one on to the
// next double quote), and anything else (an XML declaration, text, a tab) stops it. The check
// is NCCL's rules, so that "well-formed" means "NCCL loads it".
bool IsBlank(char c) {
  return c == ' ' || c == '\n' || c == '\r';
}
bool EndsName(char c) {
  return c == ' ' || c == '>' || c == '/' || c == '\n' || c == '\r';
}

constexpr size_t kMaxNcclElements = 256;  // NCCL_TOPO_XML_MAX_NODES
constexpr size_t kMaxNcclString = 255;    // MAX_STR_LEN less its terminator

// A cursor over the document that knows its line, for the problem's message.
class XmlCursor {
 public:
  explicit XmlCursor(std::string_view text) : text_(text) {}
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  bool StartsWith(std::string_view s) const { return text_.substr(pos_).starts_with(s); }
  void Advance(size_t n) { pos_ = std::min(text_.size(), pos_ + n); }
  void SkipBlanks() {
    while (!AtEnd() && IsBlank(text_[pos_])) ++pos_;
  }
  // Moves past `end`; false when the document ends first.
  bool SkipPast(std::string_view end) {
    const size_t at = text_.find(end, pos_);
    if (at == std::string_view::npos) return false;
    pos_ = at + end.size();
    return true;
  }
  std::string_view Name() {
    const size_t start = pos_;
    while (!AtEnd() && !EndsName(text_[pos_]) && text_[pos_] != '=') ++pos_;
    return text_.substr(start, pos_ - start);
  }
  std::string Problem(std::string_view what) const {
    const auto line =
        1 + std::count(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(pos_), '\n');
    return fmt::format("line {}: {}", line, what);
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

std::string Shown(char c) {
  if (c == '\t') return "a tab";
  if (c == '\0') return "the end";
  return fmt::format("'{}'", SanitizeUtf8(std::string(1, c)));
}

// An element's attributes up to its '>' or "/>"; sets `closed` for "/>" and `version` to the
// value of a version attribute.
std::optional<std::string> Attributes(XmlCursor& at, std::string_view element, bool& closed,
                                      std::string& version) {
  while (at.Peek() == ' ') {
    at.Advance(1);
    const std::string_view name = at.Name();
    if (at.Peek() != '=') {
      return at.Problem(
          fmt::format("<{}>: {} where an attribute's '=' belongs", element, Shown(at.Peek())));
    }
    at.Advance(1);
    if (at.Peek() == '\'') {
      return at.Problem(fmt::format(
          "attribute {}'s value is in single quotes: NCCL reads double quotes (older versions "
          "run on to the next double quote)",
          SanitizeUtf8(std::string(name))));
    }
    if (at.Peek() != '"') {
      return at.Problem(fmt::format("attribute {}'s value is not in double quotes",
                                    SanitizeUtf8(std::string(name))));
    }
    at.Advance(1);
    std::string value;
    while (!at.AtEnd() && at.Peek() != '"') {
      value += at.Peek();
      at.Advance(1);
    }
    if (at.AtEnd()) {
      return at.Problem(
          fmt::format("attribute {}'s value is not closed", SanitizeUtf8(std::string(name))));
    }
    if (value.size() > kMaxNcclString) {
      return at.Problem(fmt::format("attribute {}'s value is longer than NCCL's {} characters",
                                    SanitizeUtf8(std::string(name)), kMaxNcclString));
    }
    if (name == "version") version = value;
    at.Advance(1);
  }
  if (at.StartsWith("/>")) {
    at.Advance(2);
    closed = true;
    return std::nullopt;
  }
  if (at.Peek() == '>') {
    at.Advance(1);
    closed = false;
    return std::nullopt;
  }
  if (at.AtEnd()) return at.Problem(fmt::format("<{}> is cut short", element));
  return at.Problem(
      fmt::format("<{}>: {} where NCCL expects '>', '/>' or one space before an "
                  "attribute",
                  element, Shown(at.Peek())));
}

std::optional<std::string> TopologyProblem(std::string_view text) {
  XmlCursor at(text);
  std::vector<std::string> open;
  bool had_root = false;
  size_t elements = 0;
  while (true) {
    at.SkipBlanks();
    if (at.AtEnd()) break;
    if (at.Peek() != '<') {
      return at.Problem(
          fmt::format("{} where NCCL expects '<' (it reads no text, and only "
                      "spaces and line ends between elements)",
                      Shown(at.Peek())));
    }
    if (at.StartsWith("<!--")) {
      if (!at.SkipPast("-->")) return at.Problem("a comment is not closed");
      continue;
    }
    if (at.StartsWith("<?")) {
      return at.Problem("an XML declaration (<?xml ...?>): NCCL's reader stops at it");
    }
    if (at.StartsWith("<!"))
      return at.Problem("a declaration (<!DOCTYPE, CDATA) NCCL does not read");
    if (at.StartsWith("</")) {
      at.Advance(2);
      const std::string name(at.Name());
      if (at.Peek() != '>')
        return at.Problem(fmt::format("</{}> is cut short", SanitizeUtf8(name)));
      at.Advance(1);
      if (open.empty() || open.back() != name) {
        return at.Problem(open.empty() ? fmt::format("</{}> closes nothing", SanitizeUtf8(name))
                                       : fmt::format("</{}> where </{}> belongs",
                                                     SanitizeUtf8(name), open.back()));
      }
      open.pop_back();
      continue;
    }
    at.Advance(1);
    const std::string name = SanitizeUtf8(std::string(at.Name()));
    if (name.empty()) return at.Problem("'<' that starts no element");
    if (++elements > kMaxNcclElements) {
      return at.Problem(fmt::format("more than {} elements: NCCL reads at most {}",
                                    kMaxNcclElements, kMaxNcclElements));
    }
    const bool root = open.empty();
    if (root) {
      if (had_root) return at.Problem(fmt::format("a second root element <{}>", name));
      if (name != "system") {
        return at.Problem(fmt::format("the root is <{}>, not NCCL's <system>", name));
      }
      had_root = true;
    }
    bool closed = false;
    std::string version;
    if (auto problem = Attributes(at, name, closed, version)) return problem;
    if (root && version != "1") {
      return at.Problem(version.empty() ? std::string("<system> has no version: NCCL needs "
                                                      "version=\"1\"")
                                        : fmt::format("<system version=\"{}\">: NCCL reads "
                                                      "version 1 only",
                                                      SanitizeUtf8(version)));
    }
    if (!closed) open.push_back(name);
  }
  if (!open.empty()) return at.Problem(fmt::format("<{}> is not closed", open.back()));
  if (!had_root) return std::string("no element: not an NCCL topology (<system>)");
  return std::nullopt;
}

std::string FromEnvironment(const std::map<std::string, std::string>& environment) {
  const auto it = environment.find("NCCL_TOPO_FILE");
  return it == environment.end() ? std::string() : it->second;
}

}  // namespace

std::optional<std::string> NcclTopologyXmlProblem(std::string_view text) {
  return TopologyProblem(text);
}

void CollectNcclTopologyFile(const sys::FileSystem& fs,
                             const std::map<std::string, std::string>& environment,
                             const json* nccl_conf, AuditEvidence& out) {
  std::string path = FromEnvironment(environment);
  std::string source = "NCCL_TOPO_FILE";
  if (path.empty() && nccl_conf != nullptr && nccl_conf->is_object()) {
    const auto it = nccl_conf->find("NCCL_TOPO_FILE");
    if (it != nccl_conf->end() && it->is_string() && !it->get<std::string>().empty()) {
      path = it->get<std::string>();
      source = "/etc/nccl.conf";
    }
  }
  if (path.empty()) {
    // Unset, NCCL loads its default path when it is there and says nothing when it is not.
    if (!fs.Exists(kNcclDefaultTopoFile)) {
      out["network.nccl.topo_file"] = nullptr;
      out["network.nccl.topo_file_sha256"] = nullptr;
      return;
    }
    path = kNcclDefaultTopoFile;
    source = "NCCL's default path";
  }
  json file = {{"path", SanitizeUtf8(path)},
               {"source", source},
               {"found", false},
               {"bytes", nullptr},
               {"problem", nullptr}};
  out["network.nccl.topo_file_sha256"] = nullptr;
  if (!path.starts_with('/')) {
    // NCCL opens it as it is: each job would resolve it against its own working folder.
    file["problem"] = "a relative path: each job resolves it against its own working folder";
    out["network.nccl.topo_file"] = file;
    return;
  }
  if (!fs.Exists(path)) {
    out["network.nccl.topo_file"] = file;
    return;
  }
  file["found"] = true;
  if (fs.IsDirectory(path)) {
    file["problem"] = "a folder, not a file";
  } else if (!fs.IsRegularFile(path)) {
    // The audit reads as root: a device may act when opened, a FIFO would block it.
    file["problem"] = "not a regular file (a device, a FIFO or a socket): not opened";
  } else if (auto text = fs.ReadFile(path, kNcclTopoFileMaxBytes); !text) {
    file["problem"] = "cannot be read: " + text.error().message;
  } else {
    file["bytes"] = text->size();
    out["network.nccl.topo_file_sha256"] = Sha256Hex(*text);
    if (text->find_first_not_of(" \t\r\n") == std::string::npos) {
      file["problem"] = "empty";
    } else if (auto problem = NcclTopologyXmlProblem(*text)) {
      file["problem"] = SanitizeUtf8(*problem);
    }
  }
  out["network.nccl.topo_file"] = file;
}

}  // namespace cmax::audit
