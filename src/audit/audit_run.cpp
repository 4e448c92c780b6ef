#include "audit/audit_run.hpp"

#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

// The public table is refused above 4 MB too; ours is 3 KB.
constexpr size_t kMaxTableBytes = size_t{4} << 20;

}  // namespace

Result<MinimumTable> LoadMinimums(const std::string& path, const AuditIo& io) {
  if (path.empty()) return MinimumTable::Builtin();
  auto text = io.fs->ReadFile(path, kMaxTableBytes);
  if (!text) return tl::unexpected(text.error());
  auto table = MinimumTable::Parse(*text);
  if (!table) return Wrap(table.error(), path);
  return table;
}

Result<std::string> ShowMinimums(const std::string& path, const AuditIo& io) {
  auto table = LoadMinimums(path, io);
  if (!table) return tl::unexpected(table.error());
  return MinimumTableText(*table, io.clock->Now());
}

}  // namespace cmax::audit
