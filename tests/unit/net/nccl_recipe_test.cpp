// The golden recipes as data, NCCL's selection syntax, and a node's settings judged: each rule
// on the smallest node that breaks it, and a node that follows its recipe has nothing to change.
#include "net/nccl_recipe.hpp"

#include <gtest/gtest.h>

#include "core/strings.hpp"
#include "sys/file_system.hpp"

namespace cmax::net {
namespace {

TEST(NcclRecipes, TheBuiltInRecipesParseAndEachSettingHasASource) {
  const NcclRecipes& recipes = NcclRecipes::Builtin();
  ASSERT_GE(recipes.All().size(), 8U);
  ASSERT_NE(recipes.Find("generic"), nullptr);
  for (const NcclRecipe& r : recipes.All()) {
    for (const NcclRecipeSetting& s : r.settings) {
      EXPECT_FALSE(s.source.empty()) << r.name << " " << s.name;
      EXPECT_TRUE(s.name.starts_with("NCCL_")) << r.name << " " << s.name;
    }
  }
  EXPECT_TRUE(recipes.Find("azure-nd-v5")->needs_topology_file);
}

TEST(NcclRecipes, BrokenRecipesAreRefusedSayingWhere) {
  const auto refused = [](const std::string& text, const std::string& says) {
    const auto r = NcclRecipes::Parse(text);
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  };
  const std::string head = R"({"schema": "cmax.nccl-recipes/v1", "recipes": [)";
  const std::string ok =
      R"({"name": "a", "title": "t", "fabric": "any", "settings": [], "avoid": [],
          "vendor_tuned": [], "needs_topology_file": false})";
  EXPECT_TRUE(NcclRecipes::Parse(head + ok + "]}"));
  refused("[]", "not a JSON object");
  refused(R"({"schema": "x", "recipes": []})", "cmax.nccl-recipes/v1");
  refused(head + "]}", "non-empty list");
  refused(head + ok + "," + ok + "]}", "'a' is named twice");
  refused(head + R"({"name": "a", "title": "t", "fabric": "any", "settings": [{"name": "N"}],
                     "avoid": [], "vendor_tuned": [], "needs_topology_file": false}]})",
          "\"why\" must be a non-empty string");
  refused(head + R"({"name": "a", "title": "t", "fabric": "any", "settings": [], "avoid": [],
                     "vendor_tuned": [], "needs_topology_file": "yes"}]})",
          "needs_topology_file");
  refused(head + R"({"name": "a", "title": "t", "fabric": "any", "setings": []}]})", "setings");
  // What is printed on lines of its own, the nccl.conf recommended among them, cannot forge
  // another line (a value "2\nNCCL_ALGO=Tree" recommended what the rules forbid) or reach the
  // terminal as an escape; a misspelt fabric would turn its rules off.
  const auto with_setting = [&](const std::string& setting) {
    return head + R"({"name": "a", "title": "t", "fabric": "any", "settings": [)" + setting +
           R"(], "avoid": [], "vendor_tuned": [], "needs_topology_file": false}]})";
  };
  refused(with_setting(R"({"name": "NCCL_IB_GID_INDEX", "value": "2\nNCCL_ALGO=Tree",
                           "why": "w", "source": "s"})"),
          "\"value\" must be one printable line");
  refused(with_setting(R"({"name": "NCCL_X", "value": "1", "why": "x\nNCCL_PROTO=LL",
                           "source": "s"})"),
          "\"why\" must be one printable line");
  refused(with_setting(R"({"name": "NCCL_X", "value": "1", "why": "w",
                           "source": "\u001b[31mred"})"),
          "\"source\" must be one printable line");
  refused(with_setting(R"({"name": "NCCL_X=1\nNCCL_ALGO", "value": "1", "why": "w",
                           "source": "s"})"),
          "\"name\" must be one printable line");
  refused(with_setting(R"({"name": "NCCL_X=1", "value": "1", "why": "w", "source": "s"})"),
          "\"name\" must be an environment variable's name");
  refused(with_setting(R"({"name": "nccl_x", "value": "1", "why": "w", "source": "s"})"),
          "\"name\" must be an environment variable's name");
  refused(head + R"({"name": "a", "title": "t", "fabric": "rocee", "settings": [], "avoid": [],
                     "vendor_tuned": [], "needs_topology_file": false}]})",
          "\"fabric\" must be one of");
  refused(head + R"({"name": "a", "title": "t", "fabric": "any", "settings": [], "avoid": [],
                     "vendor_tuned": ["NCCL_A B"], "needs_topology_file": false}]})",
          "\"vendor_tuned\" must be");
  EXPECT_TRUE(NcclRecipes::Parse(
      with_setting(R"({"name": "FI_PROVIDER", "value": "", "why": "w", "source": "https://x"})")));
}

TEST(NcclRecipes, TheConfigurationFileAsNcclReadsIt) {
  const auto conf = ParseNcclConf(
      "# tuned by the provider\nNCCL_IB_HCA = mlx5\n\nNCCL_ALGO=Ring\nbogus\n=x\n"
      "NCCL_ALGO=Tree\n#NCCL_PROTO=LL\nNCCL_SOCKET_IFNAME=eth0=x\n");
  EXPECT_EQ(conf.size(), 3U);
  EXPECT_EQ(conf.at("NCCL_IB_HCA "), " mlx5");  // nothing trimmed: NCCL reads another name
  EXPECT_EQ(conf.at("NCCL_ALGO"), "Ring");      // the first wins, as NCCL's setenv(.., 0)
  EXPECT_EQ(conf.at("NCCL_SOCKET_IFNAME"), "eth0=x");
  EXPECT_EQ(Join(TuningOverrides({{"NCCL_PROTO", "LL"},
                                  {"NCCL_MIN_NCHANNELS", "4"},
                                  {"NCCL_IB_HCA", "x"},
                                  {"NCCL_ALGO ", "Ring"}}),
                 ","),
            "NCCL_PROTO,NCCL_MIN_NCHANNELS");
}

TEST(NcclRecipes, SelectionsAsNcclMatchesThem) {
  const std::vector<std::string> hcas = {"mlx5_0", "mlx5_1", "mlx5_10", "mlx5_bond_0"};
  const std::pair<std::string, std::string> table[] = {
      {"mlx5", "mlx5_0,mlx5_1,mlx5_10,mlx5_bond_0"},  // prefixes
      {"mlx5_1", "mlx5_1,mlx5_10"},                   // a prefix takes mlx5_10 too
      {"=mlx5_1", "mlx5_1"},                          // exact
      {"=mlx5_0:1,mlx5_1:1", "mlx5_0,mlx5_1"},        // ports ignored for the match
      {"^mlx5_bond", "mlx5_0,mlx5_1,mlx5_10"},        // excluded
      {"^=mlx5_1", "mlx5_0,mlx5_10,mlx5_bond_0"},     // excluded exactly
      {"ib", ""},
      {"^", ""},  // an empty list matches all: none
      {"=", "mlx5_0,mlx5_1,mlx5_10,mlx5_bond_0"},
      {"", "mlx5_0,mlx5_1,mlx5_10,mlx5_bond_0"},
      {" mlx5_0 , , mlx5_1:1 ", "mlx5_0,mlx5_1,mlx5_10"}};
  for (const auto& [value, chosen] : table) {
    EXPECT_EQ(Join(NcclSelects(value, hcas), ","), chosen) << "'" << value << "'";
  }
}

NcclNodeSettings Node() {
  NcclNodeSettings node{.conf_files = {"/etc/nccl.conf"}};
  node.rdma_devices = {{"mlx5_0", "InfiniBand"}, {"mlx5_1", "InfiniBand"}};
  node.interfaces = {"eth0", "ib0", "lo"};
  return node;
}

std::string Statuses(const RecipeVerdict& v) {
  std::vector<std::string> out;
  for (const RecipeItem& i : v.items) {
    out.push_back(std::string(RecipeStatusName(i.status)) + " " + i.setting);
  }
  return Join(out, "; ");
}

TEST(NcclRecipes, EachRuleOnTheNodeThatBreaksIt) {
  const NcclRecipe& generic = *NcclRecipes::Builtin().Find("generic");
  EXPECT_EQ(Statuses(JudgeNcclSettings(Node(), generic)), "");

  NcclNodeSettings node = Node();
  node.conf = {{"NCCL_ALGO", "Ring"}, {"NCCL_IB_HCA ", " mlx5"}};
  node.conf_origin = {{"NCCL_ALGO", "/etc/nccl.conf"}, {"NCCL_IB_HCA ", "/etc/nccl.conf"}};
  node.env = {{"NCCL_PROTO", "Simple"}};
  const RecipeVerdict overrides = JudgeNcclSettings(node, generic);
  EXPECT_EQ(Statuses(overrides), "ignored NCCL_IB_HCA; defeats NCCL_ALGO; defeats NCCL_PROTO");
  EXPECT_NE(overrides.items[0].message.find("write NCCL_IB_HCA=mlx5"), std::string::npos)
      << overrides.items[0].message;
  EXPECT_NE(overrides.items[1].message.find("(from /etc/nccl.conf)"), std::string::npos);
  EXPECT_NE(overrides.items[2].message.find("(from the environment)"), std::string::npos);
  // The vendor's own profile sets them on purpose.
  node.env = {{"NCCL_PROTO", "Simple,LL128"}, {"NCCL_MIN_NCHANNELS", "4"}};
  node.conf.clear();
  const RecipeVerdict mega = JudgeNcclSettings(node, *NcclRecipes::Builtin().Find("gcp-a3-mega"));
  EXPECT_EQ(Statuses(mega).find("defeats"), std::string::npos) << Statuses(mega);

  node = Node();
  node.env = {{"NCCL_IB_HCA", "=mlx5_0,mlx5_7"}, {"NCCL_SOCKET_IFNAME", "enp"}};
  const RecipeVerdict devices = JudgeNcclSettings(node, generic);
  EXPECT_EQ(Statuses(devices), "no-device NCCL_IB_HCA; no-device NCCL_SOCKET_IFNAME");
  EXPECT_NE(devices.items[0].message.find("'mlx5_7' matches no RDMA device here"),
            std::string::npos)
      << devices.items[0].message;
  EXPECT_NE(devices.items[1].message.find("selects none of this node's network interfaces"),
            std::string::npos);
  node.rdma_devices.clear();
  node.env = {{"NCCL_IB_HCA", "mlx5"}};
  EXPECT_EQ(Statuses(JudgeNcclSettings(node, generic)), "no-device NCCL_IB_HCA");

  // RoCE without its GID index, and InfiniBand beside Ethernet RDMA without a choice.
  node = Node();
  node.rdma_devices = {{"mlx5_0", "Ethernet"}, {"mlx5_1", "Ethernet"}};
  const RecipeVerdict roce = JudgeNcclSettings(node, generic);
  EXPECT_EQ(Statuses(roce), "missing NCCL_IB_GID_INDEX");
  ASSERT_EQ(roce.recommended.size(), 1U);
  EXPECT_EQ(roce.recommended[0].value, "3");
  node.env = {{"NCCL_IB_GID_INDEX", "3"}};
  EXPECT_EQ(Statuses(JudgeNcclSettings(node, generic)), "");
  node = Node();
  node.rdma_devices.push_back({"mlx5_2", "Ethernet"});
  const RecipeVerdict mixed = JudgeNcclSettings(node, generic);
  EXPECT_EQ(Statuses(mixed), "missing NCCL_IB_HCA");
  ASSERT_EQ(mixed.recommended.size(), 1U);
  EXPECT_EQ(mixed.recommended[0].value, "=mlx5_0,mlx5_1");

  // A platform that needs a topology file; a recipe's settings missing, different, avoided.
  node = Node();
  const RecipeVerdict azure = JudgeNcclSettings(node, *NcclRecipes::Builtin().Find("azure-nd-v5"));
  EXPECT_EQ(Statuses(azure), "missing NCCL_TOPO_FILE; missing NCCL_IB_PCI_RELAXED_ORDERING");
  node.conf = {{"NCCL_TOPO_FILE", "/opt/microsoft/ndv5-topo.xml"},
               {"NCCL_IB_PCI_RELAXED_ORDERING", "0"}};
  EXPECT_EQ(Statuses(JudgeNcclSettings(node, *NcclRecipes::Builtin().Find("azure-nd-v5"))),
            "differs NCCL_IB_PCI_RELAXED_ORDERING");
  node = Node();
  node.env = {{"FI_EFA_USE_DEVICE_RDMA", "1"}};
  EXPECT_EQ(Statuses(JudgeNcclSettings(node, *NcclRecipes::Builtin().Find("aws-p5-efa"))),
            "avoid FI_EFA_USE_DEVICE_RDMA");
}

TEST(NcclRecipes, TheRecommendedFileIsPrintedWithItsReasons) {
  NcclNodeSettings node = Node();
  const RecipeVerdict v = JudgeNcclSettings(node, *NcclRecipes::Builtin().Find("azure-nd-v5"));
  const std::string text = RecipeVerdictText(v, node);
  EXPECT_NE(text.find("# NCCL_TOPO_FILE=<set me>\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nNCCL_IB_PCI_RELAXED_ORDERING=1\n"), std::string::npos) << text;
  const auto json = RecipeVerdictJson(v, node);
  EXPECT_EQ(json["schema"], "cmax.nccl-recipe/v1");
  EXPECT_EQ(json["items"].size(), 2U);
  // A value from the environment with a line break stays on its item's line.
  node.env = {{"NCCL_ALGO", "Ring\n  ok        everything is fine"}};
  const std::string forged =
      RecipeVerdictText(JudgeNcclSettings(node, *NcclRecipes::Builtin().Find("azure-nd-v5")), node);
  EXPECT_EQ(forged.find("\n  ok        everything"), std::string::npos) << forged;
  EXPECT_NE(forged.find("Ring?  ok"), std::string::npos) << forged;
}

TEST(NcclRecipes, TheNodeIsReadFromItsFilesInNcclsOrder) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/etc/nccl.conf", "NCCL_ALGO=Ring\nNCCL_PROTO=Simple\n");
  fs.AddFile("/root/.nccl.conf", "NCCL_PROTO=LL\n");
  fs.AddFile("/opt/nccl.conf", "NCCL_MIN_NCHANNELS=4\n");
  fs.AddFile("/sys/class/infiniband/mlx5_1/ports/1/link_layer", "Ethernet\n");
  fs.AddFile("/sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
  fs.AddFile("/sys/class/net/eth0/mtu", "1500\n");
  const auto env = [](const std::string& name) {
    if (name == "NCCL_IB_HCA") return std::string("mlx5_0");
    if (name == "HOME") return std::string("/root");
    return std::string();
  };
  const NcclNodeSettings node = CollectNcclSettings(fs, env, {"NCCL_IB_HCA", "NCCL_ALGO"});
  // ~/.nccl.conf first, then /etc/nccl.conf; the first of a name wins, the environment over all.
  EXPECT_EQ(node.conf_files, (std::vector<std::string>{"/root/.nccl.conf", "/etc/nccl.conf"}));
  EXPECT_EQ(node.Effective("NCCL_PROTO"), "LL");
  EXPECT_EQ(node.Where("NCCL_PROTO"), "/root/.nccl.conf");
  EXPECT_EQ(node.Effective("NCCL_ALGO"), "Ring");
  EXPECT_EQ(node.Where("NCCL_ALGO"), "/etc/nccl.conf");
  EXPECT_EQ(node.Where("NCCL_IB_HCA"), "the environment");
  ASSERT_EQ(node.rdma_devices.size(), 2U);
  EXPECT_EQ(node.rdma_devices[0].name, "mlx5_0");
  EXPECT_EQ(node.rdma_devices[1].link_layer, "Ethernet");
  EXPECT_EQ(Join(node.interfaces, ","), "eth0");
  // NCCL_CONF_FILE replaces ~/.nccl.conf; /etc/nccl.conf is read after it all the same.
  const auto named = CollectNcclSettings(
      fs,
      [](const std::string& n) {
        return n == "NCCL_CONF_FILE" ? "/opt/nccl.conf" : n == "HOME" ? "/root" : "";
      },
      {});
  EXPECT_EQ(named.conf_files, (std::vector<std::string>{"/opt/nccl.conf", "/etc/nccl.conf"}));
  EXPECT_EQ(named.Effective("NCCL_MIN_NCHANNELS"), "4");
  EXPECT_EQ(named.Effective("NCCL_PROTO"), "Simple");
  sys::MemoryFileSystem bare;
  const auto none = CollectNcclSettings(bare, env, {});
  EXPECT_TRUE(none.conf_files.empty());
  EXPECT_TRUE(none.rdma_devices.empty());
}

}  // namespace
}  // namespace cmax::net
