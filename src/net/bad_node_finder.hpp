// Which node drags a group's collective bandwidth down: the group is measured whole, then by
// halves, narrowing into each half that is slow, and at the end each suspect is paired with a
// node already seen fast; a node whose pair is slow is named, with the figures that convict it.
// "Slow" is more than the tolerance below the reference: the platform's figure when given,
// else the best bus bandwidth any group of two or more reached (busbw is the link's rate
// whatever the group's size, which is why groups of different sizes compare). A group that
// cannot be measured (a node down, a run that hangs) is narrowed like a slow one, and a pair
// that cannot be measured names its suspect as unreachable. Pure: measuring is the caller's.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace cmax::net {

struct GroupMeasurement {
  std::vector<std::string> nodes;
  std::optional<double> busbw_gbs;  // the group's large-message busbw; none: it failed
  std::string problem;              // why it failed
};

// Runs the collective over `nodes` and says what it reached.
using MeasureGroup = std::function<GroupMeasurement(const std::vector<std::string>& nodes)>;

struct BadNodeOptions {
  double tolerance = 0.10;
  std::optional<double> reference_gbs;  // a healthy group's busbw; none: the best measured
  size_t max_measurements = 64;         // the work is bounded whatever the answers
  std::function<bool()> stop;           // true: measure nothing more (Ctrl-C)
};

struct SlowNode {
  std::string node;
  std::optional<double> busbw_gbs;  // its pair's; none: the pair could not run
  std::string partner;              // the node it was paired with, seen fast
  std::string why;
};

struct BadNodeVerdict {
  std::vector<SlowNode> slow;
  std::vector<GroupMeasurement> measurements;  // every run, in order
  std::optional<double> reference_gbs;         // what "slow" was judged against
  // The figures had something to be held against: a reference given, or a third node. A pair
  // alone, held against its own figure, is no verdict either way.
  bool judged = false;
  std::vector<std::string> notes;
};

BadNodeVerdict FindBadNodes(const std::vector<std::string>& nodes, const MeasureGroup& measure,
                            const BadNodeOptions& options);

nlohmann::json BadNodeVerdictJson(const BadNodeVerdict& verdict);
std::string BadNodeVerdictText(const BadNodeVerdict& verdict);

}  // namespace cmax::net
