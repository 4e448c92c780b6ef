// The bad-node finder against a simulated fabric (a stand-in named as one): each node has a
// link rate, a group's busbw is its slowest member's, a node marked down fails every group it
// is in. Known slow nodes must be named with their figures, in few measurements; a uniformly
// slow group, a fault between halves and a node down are each said for what they are.
#include "net/bad_node_finder.hpp"

#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace cmax::net {
namespace {

struct Fabric {
  std::map<std::string, double> rate;
  std::set<std::string> down;
  // A slow path used only when both sides are in the group (a link between two switches).
  std::set<std::string> left;
  std::set<std::string> right;
  double between = 0;

  MeasureGroup Measure() const {
    return [this](const std::vector<std::string>& nodes) {
      GroupMeasurement m;
      double bw = 1e9;
      bool l = false;
      bool r = false;
      for (const std::string& n : nodes) {
        if (down.contains(n)) {
          m.problem = n + " did not answer";
          return m;
        }
        bw = std::min(bw, rate.at(n));
        l = l || left.contains(n);
        r = r || right.contains(n);
      }
      if (l && r && between > 0) bw = std::min(bw, between);
      m.busbw_gbs = bw;
      return m;
    };
  }
};

Fabric Nodes(int n, double rate = 100) {
  Fabric f;
  for (int i = 1; i <= n; ++i) f.rate["n" + std::to_string(i)] = rate;
  return f;
}

std::vector<std::string> Names(const Fabric& f) {
  std::vector<std::string> out;
  for (const auto& [name, rate] : f.rate) out.push_back(name);
  return out;
}

std::vector<std::string> Slow(const BadNodeVerdict& v) {
  std::vector<std::string> out;
  for (const SlowNode& s : v.slow) out.push_back(s.node);
  return out;
}

TEST(BadNodeFinder, NamesTheOneSlowNodeOfEightWithItsFigures) {
  Fabric f = Nodes(8);
  f.rate["n5"] = 50;
  const BadNodeVerdict v = FindBadNodes(Names(f), f.Measure(), {});
  ASSERT_EQ(Slow(v), std::vector<std::string>{"n5"}) << BadNodeVerdictText(v);
  EXPECT_EQ(v.slow[0].busbw_gbs, 50);
  EXPECT_FALSE(v.slow[0].partner.empty());
  EXPECT_NE(v.slow[0].partner, "n5");
  EXPECT_EQ(v.reference_gbs, 100);
  // Whole, halves, quarters, the two suspects each beside a fast node, the slow one again beside
  // a second.
  EXPECT_LE(v.measurements.size(), 9U) << BadNodeVerdictText(v);
}

TEST(BadNodeFinder, NamesTwoSlowNodesInDifferentHalves) {
  Fabric f = Nodes(8);
  f.rate["n2"] = 40;
  f.rate["n7"] = 60;
  const BadNodeVerdict v = FindBadNodes(Names(f), f.Measure(), {});
  EXPECT_EQ(Slow(v), (std::vector<std::string>{"n2", "n7"})) << BadNodeVerdictText(v);
}

TEST(BadNodeFinder, AHealthyGroupNamesNobody) {
  const Fabric f = Nodes(8);
  const BadNodeVerdict v = FindBadNodes(Names(f), f.Measure(), {});
  EXPECT_TRUE(v.slow.empty());
  EXPECT_EQ(v.notes, std::vector<std::string>{"no node drags the group down"});
  // With the platform's figure and a group that reaches it, one measurement is enough.
  const BadNodeVerdict quick = FindBadNodes(Names(f), f.Measure(), {.reference_gbs = 95});
  EXPECT_EQ(quick.measurements.size(), 1U);
  EXPECT_TRUE(quick.slow.empty());
}

TEST(BadNodeFinder, AUniformlySlowGroupIsNotBlamedOnANode) {
  const Fabric f = Nodes(4, 40);
  const BadNodeVerdict v = FindBadNodes(Names(f), f.Measure(), {.reference_gbs = 100});
  EXPECT_TRUE(v.slow.empty()) << BadNodeVerdictText(v);
  ASSERT_FALSE(v.notes.empty());
  EXPECT_NE(v.notes[0].find("nothing to tell a slow node from"), std::string::npos) << v.notes[0];
}

TEST(BadNodeFinder, AFaultBetweenHalvesIsSaidAsOne) {
  Fabric f = Nodes(8);
  f.left = {"n1", "n2", "n3", "n4"};
  f.right = {"n5", "n6", "n7", "n8"};
  f.between = 30;
  const BadNodeVerdict v = FindBadNodes(Names(f), f.Measure(), {});
  EXPECT_TRUE(v.slow.empty());
  ASSERT_EQ(v.notes.size(), 1U);
  EXPECT_EQ(v.notes[0],
            "n1,n2,n3,n4 and n5,n6,n7,n8 are each fast alone, together slow: a path between them, "
            "not one node");
}

// A slow path between two groups of switches that the halving does not follow: the nodes seen
// slow beside one side's node are fast beside the other's, so no node is named.
TEST(BadNodeFinder, APathFaultAcrossTheHalvesConvictsNobody) {
  Fabric f = Nodes(8);
  f.left = {"n1", "n2", "n3", "n5"};
  f.right = {"n4", "n6", "n7", "n8"};
  f.between = 30;
  const BadNodeVerdict v = FindBadNodes(Names(f), f.Measure(), {.reference_gbs = 100});
  EXPECT_TRUE(v.slow.empty()) << BadNodeVerdictText(v);
  const std::string text = BadNodeVerdictText(v);
  EXPECT_NE(
      text.find("n4 is slow beside n1 and fast beside n7: the path between n4 and n1, not n4"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("n6 is slow beside n1 and fast beside n7"), std::string::npos) << text;
}

TEST(BadNodeFinder, ANodeThatCannotBeReachedIsNamedSo) {
  Fabric f = Nodes(8);
  f.down = {"n3"};
  const BadNodeVerdict v = FindBadNodes(Names(f), f.Measure(), {});
  ASSERT_EQ(Slow(v), std::vector<std::string>{"n3"}) << BadNodeVerdictText(v);
  EXPECT_FALSE(v.slow[0].busbw_gbs);
  EXPECT_EQ(v.slow[0].why, "its pair with a fast node could not run: n3 did not answer");
}

TEST(BadNodeFinder, SmallGroupsComparePairs) {
  Fabric f = Nodes(3);
  f.rate["n2"] = 50;
  const BadNodeVerdict v = FindBadNodes(Names(f), f.Measure(), {});
  EXPECT_EQ(Slow(v), std::vector<std::string>{"n2"}) << BadNodeVerdictText(v);
  EXPECT_EQ(v.slow[0].partner, "n1");
  // Two nodes alone: one pair, nothing to compare it with.
  Fabric two = Nodes(2);
  two.rate["n2"] = 50;
  const BadNodeVerdict alone = FindBadNodes(Names(two), two.Measure(), {});
  EXPECT_TRUE(alone.slow.empty());
  EXPECT_NE(alone.notes[0].find("a reference"), std::string::npos) << alone.notes[0];
  // With the reference, the pair is slow, but which of the two it is cannot be said.
  const BadNodeVerdict referenced = FindBadNodes(Names(two), two.Measure(), {.reference_gbs = 100});
  EXPECT_TRUE(referenced.slow.empty());
  EXPECT_EQ(referenced.notes,
            std::vector<std::string>{"the pair is slow; which of the two needs a third node"});
  EXPECT_EQ(referenced.measurements.size(), 1U);
  EXPECT_EQ(FindBadNodes({"n1"}, two.Measure(), {}).notes,
            std::vector<std::string>{"fewer than two nodes: nothing to compare"});
}

TEST(BadNodeFinder, TheWorkIsBounded) {
  Fabric f = Nodes(64, 40);  // uniformly slow against the reference: every half narrowed
  const BadNodeVerdict v =
      FindBadNodes(Names(f), f.Measure(), {.reference_gbs = 100, .max_measurements = 10});
  EXPECT_EQ(v.measurements.size(), 10U);
  EXPECT_NE(v.notes[0].find("stopped after 10 measurements"), std::string::npos);
  EXPECT_EQ(BadNodeVerdictJson(v)["measurements"].size(), 10U);
}

// Asked to stop (Ctrl-C), the search measures nothing more and says why.
TEST(BadNodeFinder, AStopMeasuresNothingMore) {
  Fabric f = Nodes(8);
  f.rate["n6"] = 10;
  int calls = 0;
  const MeasureGroup measure = [&, inner = f.Measure()](const std::vector<std::string>& nodes) {
    ++calls;
    return inner(nodes);
  };
  const BadNodeVerdict v = FindBadNodes({"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"}, measure,
                                        {.stop = [&] { return calls >= 2; }});
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(v.measurements.size(), 2U);
  ASSERT_FALSE(v.notes.empty());
  EXPECT_NE(v.notes.front().find("asked to stop"), std::string::npos) << v.notes.front();
}

}  // namespace
}  // namespace cmax::net
