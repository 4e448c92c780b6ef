// A file read as a stream, gzip or plain (zlib tells them apart by the first bytes and reads
// concatenated gzip members as one): profiler traces come either way, `.json` or `.json.gz`.
#pragma once

#include <memory>
#include <string>

#include "core/byte_source.hpp"
#include "core/result.hpp"

namespace cmax::sys {

// kNotFound when there is no such file; a gzip file cut short or corrupt reads as far as its
// data is good, then its Read says why it stopped.
Result<std::unique_ptr<ByteSource>> OpenMaybeGzipFile(const std::string& path);

}  // namespace cmax::sys
