#pragma once
// The calibration file: t_d1 per application, read at start and written at exit (calibration.cpp).
#include <cstdint>
#include <optional>
#include <string>

namespace grain::instrumentation::detail {

// The t_d1 of `app` in FILE; nullopt when the file has no entry for it. Throws
// std::runtime_error when the file cannot be read or is not a calibration file.
std::optional<double> load_calibration(const std::string& path, const std::string& app);
// Adds or replaces the entry of `app` (other applications' entries are kept).
void save_calibration(const std::string& path, const std::string& app, double t_d1_ns,
                      std::uint64_t tasks, unsigned workers);

}  // namespace grain::instrumentation::detail
