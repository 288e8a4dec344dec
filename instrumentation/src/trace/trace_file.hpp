#pragma once
// The single output file of the streamed formats (Perfetto protobuf, Chrome JSON, optionally
// gzip-compressed): written as NAME.incomplete and renamed to NAME only once complete, so that a
// full disk or a crash never leaves a file a viewer takes for a whole trace. Writers on several
// threads (the converter, the sampler, the thread taking a decision) append whole records under
// one mutex; the first failed write is remembered and reported once at the end.
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "grain/instrumentation/trace.hpp"

namespace grain::instrumentation::trace_detail {

class trace_file {
 public:
  // Creates PATH.incomplete now, so that an unwritable DIR is reported at start-up (throws
  // std::runtime_error). gzip: zlib's gzip format (the file is still named PATH).
  trace_file(std::string path, bool gzip);
  ~trace_file();
  trace_file(const trace_file&) = delete;
  trace_file& operator=(const trace_file&) = delete;

  void write(std::string_view data);
  // Closes the file; renames it to PATH when every write succeeded, otherwise leaves
  // PATH.incomplete and says why (st.complete, st.error, st.path); st.bytes: the file's size.
  void finish(trace_stats& st);

 private:
  std::string path_, writing_;
  bool gzip_;
  std::mutex m_;
  void* file_ = nullptr;  // std::FILE* or gzFile
  int error_ = 0;         // errno of the first failed write
};

}  // namespace grain::instrumentation::trace_detail
