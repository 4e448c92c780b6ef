#include "lab/lab_config.hpp"

#include <gtest/gtest.h>

#include "support/golden.hpp"

namespace cmax::lab {
namespace {

LabSpec Spec() {
  LabSpec spec;
  spec.dir = "/var/lib/cmax/lab";
  spec.nodes = 4;
  spec.spares = 2;
  return spec;
}

TEST(LabConfig, SlurmConfMatchesGolden) {
  testing::ExpectGolden("lab/slurm.conf", RenderSlurmConf(Spec(), PathsFor(Spec().dir)));
  testing::ExpectGolden("lab/gres.conf", RenderGresConf(Spec(), PathsFor(Spec().dir)));
}

TEST(LabConfig, NoSparePartitionWithoutSpares) {
  LabSpec spec = Spec();
  spec.spares = 0;
  spec.nodes = 1;
  const std::string conf = RenderSlurmConf(spec, PathsFor(spec.dir));
  EXPECT_EQ(conf.find("PartitionName=spare"), std::string::npos);
  EXPECT_NE(conf.find("NodeName=gpu1 "), std::string::npos);
  EXPECT_NE(conf.find("Port=17001-17001"), std::string::npos);
  EXPECT_EQ(conf.find("Prolog="), std::string::npos);
  spec.prolog = "/tmp/lab/prolog.sh";
  EXPECT_NE(RenderSlurmConf(spec, PathsFor(spec.dir)).find("\nProlog=/tmp/lab/prolog.sh\n"),
            std::string::npos);
}

TEST(LabConfig, NodeNames) {
  EXPECT_EQ(NodeRange(1, 4), "gpu[1-4]");
  EXPECT_EQ(NodeRange(3, 3), "gpu3");
  EXPECT_EQ(NodeNames(Spec()).size(), 6u);
  EXPECT_EQ(NodeNames(Spec()).back(), "gpu6");
}

TEST(LabConfig, ValidatesTheSpec) {
  EXPECT_TRUE(ValidateSpec(Spec()));
  auto with = [](auto change) {
    LabSpec spec = Spec();
    change(spec);
    return ValidateSpec(spec);
  };
  EXPECT_FALSE(with([](LabSpec& s) { s.dir = "relative/dir"; }));
  // Top-level and unnormalised folders could reach the host's own /etc, /var, /run ...
  for (const char* dir :
       {"/", "/etc", "/var", "/tmp", "/tmp/../etc", "/tmp/./x", "/tmp//x", "/tmp/x/"}) {
    EXPECT_FALSE(with([&](LabSpec& s) { s.dir = dir; })) << dir;
  }
  EXPECT_FALSE(with([](LabSpec& s) { s.dir = "/tmp/lab\xff"; })) << "not UTF-8";
  // Written into slurm.conf: a line break would add lines root's daemons obey (a Prolog).
  for (const char* dir :
       {"/tmp/lab\nProlog=/tmp/evil.sh", "/tmp/a lab", "/tmp/lab#x", "/tmp/lab\x1b[31m"}) {
    EXPECT_FALSE(with([&](LabSpec& s) { s.dir = dir; })) << dir;
  }
  EXPECT_FALSE(with([](LabSpec& s) { s.nodes = 0; }));
  EXPECT_FALSE(with([](LabSpec& s) { s.nodes = 65; }));
  EXPECT_FALSE(with([](LabSpec& s) { s.spares = -1; }));
  EXPECT_FALSE(with([](LabSpec& s) { s.gpus_per_node = 0; }));
  EXPECT_FALSE(with([](LabSpec& s) { s.controller_port = 17002; }));
  EXPECT_FALSE(with([](LabSpec& s) { s.first_node_port = 65534; }));
  EXPECT_TRUE(with([](LabSpec& s) { s.prolog = "/tmp/lab/prolog.sh"; }));
  for (const char* prolog : {"prolog.sh", "/tmp/a b.sh", "/tmp/x\nEpilog=/bin/evil", "/tmp/#"}) {
    EXPECT_FALSE(with([&](LabSpec& s) { s.prolog = prolog; })) << prolog;
  }
  EXPECT_FALSE(with([](LabSpec& s) { s.dir = "/" + std::string(120, 'x'); }))
      << "the munge socket path would not fit in sun_path";
}

TEST(LabConfig, StateRoundTrips) {
  LabState state{Spec(),
                 WallTime{std::chrono::milliseconds(1795944148911)},
                 {{"munged", "/usr/sbin/munged", 100, 5555, "/l/munged.out"},
                  {"slurmctld", "/usr/sbin/slurmctld", 101, 5556, "/l/slurmctld.out"}}};
  auto back = ParseState(SerializeState(state));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->spec.spares, 2);
  state.spec.prolog = "/tmp/lab/prolog.sh";
  EXPECT_EQ(ParseState(SerializeState(state))->spec.prolog, "/tmp/lab/prolog.sh");
  EXPECT_EQ(back->started_at, state.started_at);
  ASSERT_EQ(back->daemons.size(), 2u);
  EXPECT_EQ(back->daemons[1].pid, 101);
  EXPECT_EQ(back->daemons[1].start_ticks, 5556u);
  EXPECT_FALSE(ParseState("{}"));
  EXPECT_FALSE(ParseState("not json"));
  EXPECT_FALSE(ParseState(R"({"version":1,"dir":"/x"})"));
  EXPECT_FALSE(ParseState(R"({"version":"1"})"));
  EXPECT_FALSE(ParseState(R"([1, 2])"));
}

TEST(LabConfig, ParsesSinfoNodeStates) {
  const auto states = ParseNodeStates("gpu1 idle\ngpu2 drain\ngpu2 drain\ngpu3 idle*\n\n");
  ASSERT_EQ(states.size(), 3u);
  EXPECT_EQ(states.at("gpu2"), "drain");
  EXPECT_EQ(states.at("gpu3"), "idle*");
}

}  // namespace
}  // namespace cmax::lab
