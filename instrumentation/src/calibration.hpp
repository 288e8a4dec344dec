#pragma once
// The calibration file: t_d1 per application, read at start and written at exit (calibration.cpp).
#include <cstdint>
#include <optional>
#include <string>

namespace grain::instrumentation::detail {

// The t_d1 of `app` in FILE; nullopt when the file has no entry for it. Throws
// std::runtime_error when the file cannot be read or is not a calibration file.
std::optional<double> load_calibration(const std::string& path, const std::string& app);
// --grain:save-calibration at start-up: the file is written only at exit, so what would stop it
// then (a missing or read-only directory, a directory of that name) is found now. Throws
// std::runtime_error saying why.
void check_calibration_path(const std::string& path);
// Adds or replaces the entry of `app` (other applications' entries are kept). Written as
// FILE.tmp and renamed, so a failed write (a full disk) leaves the old file whole; throws
// std::runtime_error saying why.
void save_calibration(const std::string& path, const std::string& app, double t_d1_ns,
                      std::uint64_t tasks, unsigned workers);

}  // namespace grain::instrumentation::detail
