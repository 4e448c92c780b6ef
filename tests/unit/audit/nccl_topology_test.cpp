// The NCCL topology file a node's jobs would load: the XML check on a table of documents (the
// shape `NCCL_TOPO_DUMP_FILE` writes, and ways of being broken), and the collector on a
// MemoryFileSystem: where the path comes from, and what is recorded of the file.
#include "audit/nccl_topology.hpp"

#include <gtest/gtest.h>
#include <map>
#include <optional>
#include <string>

#include "core/sha256.hpp"
#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

// The shape of a topology NCCL dumps (NCCL_TOPO_DUMP_FILE), cut to one GPU and one NIC.
constexpr const char* kDumped = R"(<!-- written by hand in the shape NCCL_TOPO_DUMP_FILE gives -->
<system version="1">
  <cpu numaid="0" affinity="00000000,ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:18:00.0" class="0x060400" vendor="0x1000" device="0xc030" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:19:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="90" rank="0" gdr="1">
          <nvlink target="0000:05:00.0" count="2" tclass="0x068000"/>
        </gpu>
      </pci>
      <pci busid="0000:1a:00.0" class="0x020700">
        <nic>
          <net name="mlx5_0" dev="0" speed="400000" port="1" latency="0.000000" guid="0x1" maxconn="131072" gdr="1"/>
        </nic>
      </pci>
    </pci>
  </cpu>
</system>
)";

TEST(NcclTopology, AcceptsWhatNcclDumps) {
  EXPECT_EQ(NcclTopologyXmlProblem(kDumped), std::nullopt);
  EXPECT_EQ(NcclTopologyXmlProblem("<system version=\"1\"/>"), std::nullopt);
  EXPECT_EQ(NcclTopologyXmlProblem("\r\n<system version=\"1\" name=\"a\">\r\n</system>\r\n"),
            std::nullopt);
}

TEST(NcclTopology, SaysWhatIsWrongAndWhere) {
  const std::map<std::string, std::string> table = {
      {"", "no element: not an NCCL topology (<system>)"},
      {"<!-- only a comment -->", "no element: not an NCCL topology (<system>)"},
      {"<topology/>", "line 1: the root is <topology>, not NCCL's <system>"},
      {"<system>\n</system>", "line 1: <system> has no version: NCCL needs version=\"1\""},
      {"<system version=\"2\"/>", "line 1: <system version=\"2\">: NCCL reads version 1 only"},
      {"<system version=\"1\">\n<cpu>\n</system>", "line 3: </system> where </cpu> belongs"},
      {"<system version=\"1\">\n<cpu numaid=0/>\n</system>",
       "line 2: attribute numaid's value is not in double quotes"},
      {"<system version='1'/>",
       "line 1: attribute version's value is in single quotes: NCCL reads double quotes (older "
       "versions run on to the next double quote)"},
      {"<system version=\"1\"><cpu numaid/></system>",
       "line 1: <cpu>: '/' where an attribute's '=' belongs"},
      {"<system version=\"1", "line 1: attribute version's value is not closed"},
      {"<system version=\"1\"", "line 1: <system> is cut short"},
      {"<system version=\"1\"\n name=\"a\"/>",
       "line 1: <system>: '\n' where NCCL expects '>', '/>' or one space before an attribute"},
      {"<system version=\"1\">\n  <cpu>", "line 2: <cpu> is not closed"},
      {"<system version=\"1\"></system>\n<system/>", "line 2: a second root element <system>"},
      {"<system version=\"1\"/>trailing",
       "line 1: 't' where NCCL expects '<' (it reads no text, and only spaces and line ends "
       "between elements)"},
      {"<system version=\"1\">\n\t<cpu/>\n</system>",
       "line 2: a tab where NCCL expects '<' (it reads no text, and only spaces and line ends "
       "between elements)"},
      {"\xEF\xBB\xBF<system version=\"1\"/>",
       "line 1: '\xEF\xBF\xBD' where NCCL expects '<' (it reads no text, and only spaces and "
       "line ends between elements)"},
      {"</system>", "line 1: </system> closes nothing"},
      {"<system version=\"1\">< cpu/></system>", "line 1: '<' that starts no element"},
      {"<?xml version=\"1.0\"?>\n<system version=\"1\"/>",
       "line 1: an XML declaration (<?xml ...?>): NCCL's reader stops at it"},
      {"<!DOCTYPE system><system/>", "line 1: a declaration (<!DOCTYPE, CDATA) NCCL does not read"},
      {"<system version=\"1\"><!-- open", "line 1: a comment is not closed"},
      {"{\"system\": 1}",
       "line 1: '{' where NCCL expects '<' (it reads no text, and only spaces and line ends "
       "between elements)"},
  };
  std::string many = "<system version=\"1\">";
  for (int i = 0; i < 256; ++i) many += "<cpu/>";
  EXPECT_EQ(NcclTopologyXmlProblem(many + "</system>").value_or("(none)"),
            "line 1: more than 256 elements: NCCL reads at most 256");
  std::string long_value = "<system version=\"1\" name=\"" + std::string(256, 'x') + "\"/>";
  EXPECT_EQ(NcclTopologyXmlProblem(long_value).value_or("(none)"),
            "line 1: attribute name's value is longer than NCCL's 255 characters");
  for (const auto& [text, want] : table) {
    EXPECT_EQ(NcclTopologyXmlProblem(text).value_or("(none)"), want) << text;
  }
}

json Collected(const sys::MemoryFileSystem& fs, const std::map<std::string, std::string>& env,
               const json* conf = nullptr) {
  AuditEvidence out;
  CollectNcclTopologyFile(fs, env, conf, out);
  EXPECT_TRUE(out.contains("network.nccl.topo_file_sha256"));
  return out.at("network.nccl.topo_file");
}

TEST(NcclTopology, NoFileNamedAndNoDefaultIsNull) {
  sys::MemoryFileSystem fs;
  EXPECT_TRUE(Collected(fs, {}).is_null());
  // An empty variable (srun clears the auditor's with NCCL_TOPO_FILE=) is unset.
  EXPECT_TRUE(Collected(fs, {{"NCCL_TOPO_FILE", ""}}).is_null());
}

TEST(NcclTopology, TheVariableThenNcclConfThenTheDefault) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/etc/nccl/env.xml", kDumped);
  fs.AddFile("/etc/nccl/conf.xml", "<system version=\"1\"/>");
  fs.AddFile(kNcclDefaultTopoFile, "<system version=\"1\"/>");
  const json conf = {{"NCCL_TOPO_FILE", "/etc/nccl/conf.xml"}};

  AuditEvidence out;
  CollectNcclTopologyFile(fs, {{"NCCL_TOPO_FILE", "/etc/nccl/env.xml"}}, &conf, out);
  EXPECT_EQ(out.at("network.nccl.topo_file"), (json{{"path", "/etc/nccl/env.xml"},
                                                    {"source", "NCCL_TOPO_FILE"},
                                                    {"found", true},
                                                    {"bytes", std::string(kDumped).size()},
                                                    {"problem", nullptr}}));
  EXPECT_EQ(out.at("network.nccl.topo_file_sha256"), Sha256Hex(kDumped));

  EXPECT_EQ(Collected(fs, {}, &conf).at("source"), "/etc/nccl.conf");
  EXPECT_EQ(Collected(fs, {}, &conf).at("path"), "/etc/nccl/conf.xml");
  const json by_default = Collected(fs, {});
  EXPECT_EQ(by_default.at("source"), "NCCL's default path");
  EXPECT_EQ(by_default.at("path"), kNcclDefaultTopoFile);
  EXPECT_TRUE(by_default.at("problem").is_null());
}

TEST(NcclTopology, RecordsWhatIsWrongWithTheFile) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/etc/nccl/blank.xml", " \n\t\n");
  fs.AddFile("/etc/nccl/other.xml", "<topology/>");
  fs.AddFile("/etc/nccl/big.xml", std::string(kNcclTopoFileMaxBytes + 1, ' '));
  fs.AddFile("/etc/nccl/dir/a.xml", "<system version=\"1\"/>");
  const auto problem = [&](const std::string& path) {
    return Collected(fs, {{"NCCL_TOPO_FILE", path}}).at("problem");
  };
  EXPECT_EQ(problem("/etc/nccl/blank.xml"), "empty");
  EXPECT_EQ(problem("/etc/nccl/other.xml"), "line 1: the root is <topology>, not NCCL's <system>");
  EXPECT_EQ(problem("/etc/nccl/dir"), "a folder, not a file");
  fs.AddLink("/etc/nccl/device", "/dev/watchdog");  // stands for what is not a regular file
  EXPECT_EQ(problem("/etc/nccl/device"),
            "not a regular file (a device, a FIFO or a socket): not opened");
  EXPECT_TRUE(problem("/etc/nccl/big.xml").get<std::string>().starts_with("cannot be read: "));
  EXPECT_EQ(problem("nccl.xml"),
            "a relative path: each job resolves it against its own working folder");

  const json missing = Collected(fs, {{"NCCL_TOPO_FILE", "/etc/nccl/gone.xml"}});
  EXPECT_EQ(missing.at("found"), false);
  EXPECT_TRUE(missing.at("problem").is_null());
  // A digest only of what was read.
  AuditEvidence out;
  CollectNcclTopologyFile(fs, {{"NCCL_TOPO_FILE", "/etc/nccl/gone.xml"}}, nullptr, out);
  EXPECT_TRUE(out.at("network.nccl.topo_file_sha256").is_null());
}

}  // namespace
}  // namespace cmax::audit
