#pragma once
// The runtime's signal thread: SIGINT, SIGTERM, SIGHUP and SIGQUIT, crashes, std::terminate
// and exit() while the runtime runs let the extensions write what they recorded before the
// process ends.

namespace grain::detail {

// Installs the handlers and starts the signal thread (runtime_core::start, once the runtime is
// current).
void install_signal_handling();
// Puts the previous dispositions back and joins the signal thread (runtime_core::stop).
void uninstall_signal_handling();

}  // namespace grain::detail
