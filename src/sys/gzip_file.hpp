// A file read as a stream, gzip or plain: profiler traces come either way, `.json` or
// `.json.gz`. A gzip file is inflated by ISA-L's igzip where Debian's libisal2 is installed
// (loaded with dlopen when a gzip file is first opened, so that no other command loads it; about
// three times zlib's speed on a profiler trace), by zlib otherwise. Either way concatenated gzip
// members read as one, as gzip -d reads them, and whatever follows the last member that is not a
// gzip member is ignored, as zlib's gzread ignores it.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/byte_source.hpp"
#include "core/result.hpp"

namespace cmax::sys {

enum class Inflater {
  kFastest,  // ISA-L where it can be loaded, else zlib
  kZlib,     // zlib's gzread, always there (linked in)
  kIsal,     // ISA-L or kUnavailable (tests hold both to the same behaviour)
};

// kNotFound when there is no such file; a gzip file cut short or corrupt reads as far as its
// data is good, then its Read says why it stopped ("gzip: unexpected end of file",
// "gzip: incorrect data check", ...: zlib's words where the two inflaters tell the fault
// apart alike). A file that does not start as gzip reads as it is.
Result<std::unique_ptr<ByteSource>> OpenMaybeGzipFile(const std::string& path,
                                                      Inflater inflater = Inflater::kFastest);

// Whether ISA-L's inflate could be loaded here, and if not why (for benchmarks and tests).
Result<void> IsalInflateAvailable();

// "isa-l" or "zlib": what kFastest uses here.
std::string_view FastestInflaterName();

}  // namespace cmax::sys
