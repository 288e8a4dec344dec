// trace_file: plain files through stdio, compressed ones through zlib's gzFile (Debian's
// zlib1g-dev; level 6, zlib's default: about 8x smaller for Chrome JSON at a fraction of the
// converter's time).
#include "trace_file.hpp"

#include <spdlog/spdlog.h>
#include <stdio.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace grain::instrumentation::trace_detail {

trace_file::trace_file(std::string path, bool gzip)
    : path_(std::move(path)), writing_(path_ + ".incomplete"), gzip_(gzip) {
  if (gzip_)
    file_ = gzopen(writing_.c_str(), "wb6");
  else
    file_ = std::fopen(writing_.c_str(), "w");
  if (!file_) throw std::runtime_error("grain: cannot create " + writing_);
}

trace_file::~trace_file() {
  if (!file_) return;
  if (gzip_)
    gzclose(static_cast<gzFile>(file_));
  else
    std::fclose(static_cast<std::FILE*>(file_));
}

void trace_file::write(std::string_view data) {
  if (data.empty()) return;
  std::lock_guard lk(m_);
  if (!file_ || error_) return;
  if (gzip_) {
    const int n =
        gzwrite(static_cast<gzFile>(file_), data.data(), static_cast<unsigned>(data.size()));
    if (n <= 0 || static_cast<std::size_t>(n) != data.size()) error_ = errno ? errno : EIO;
  } else if (std::fwrite(data.data(), 1, data.size(), static_cast<std::FILE*>(file_)) !=
             data.size()) {
    error_ = errno ? errno : EIO;
  }
}

void trace_file::finish(trace_stats& st) {
  std::lock_guard lk(m_);
  if (!file_) return;
  int err = error_;
  if (gzip_) {
    if (gzclose(static_cast<gzFile>(file_)) != Z_OK && !err) err = errno ? errno : EIO;
  } else {
    auto* f = static_cast<std::FILE*>(file_);
    if (std::ferror(f) && !err) err = errno ? errno : EIO;
    if (std::fclose(f) != 0 && !err) err = errno ? errno : EIO;
  }
  file_ = nullptr;
  st.path = path_;
  if (!err && ::rename(writing_.c_str(), path_.c_str()) != 0) err = errno;
  if (err) {
    st.complete = false;
    st.path = writing_;
    st.error = std::strerror(err);
    spdlog::error("grain: trace {}: cannot write ({}); what was written is in {}", path_, st.error,
                  writing_);
  }
  std::error_code ec;
  st.bytes = std::filesystem::file_size(st.path, ec);
}

}  // namespace grain::instrumentation::trace_detail
