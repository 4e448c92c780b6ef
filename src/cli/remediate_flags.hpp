// The remediation controller's flags, shared by `cmax remediate run` and `cmax agent
// --remediate`: bound onto remediate::ControllerSettings, which the library turns into the
// controller's config and scheduler (remediate/settings.hpp).
#pragma once

#include "core/clock.hpp"
#include "remediate/settings.hpp"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's own name
class App;
}

namespace cmax::cli {

using ControllerFlags = remediate::ControllerSettings;

// Every flag but --act, --dry-run and --node, which each command names its own way.
void AddControllerFlags(CLI::App& app, ControllerFlags& flags);
// How to reach the Kubernetes API server (--kube-*), in the help's Kubernetes group.
void AddKubeFlags(CLI::App& app, remediate::KubeFlags& kube);

}  // namespace cmax::cli
