// The gzip reader, held to one behaviour whichever inflater reads: zlib (always linked) and
// ISA-L (loaded where Debian's libisal2 is; its cases are skipped, with the reason, where not).
#include "sys/gzip_file.hpp"

#include <zlib.h>

#include <fstream>
#include <gtest/gtest.h>
#include <string>

#include "support/temp_dir.hpp"

namespace cmax::sys {
namespace {

// One gzip member of `text`, made by zlib's deflate (windowBits 31: the gzip wrapper).
std::string GzipMember(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Text that compresses about 5:1, like a trace, and spans several of the reader's buffers.
std::string TraceLikeText(int lines) {
  std::string text;
  for (int i = 0; i < lines; ++i) {
    text += "{\"ph\": \"X\", \"name\": \"kernel_" + std::to_string(i % 97) +
            "\", \"ts\": " + std::to_string(1000000 + i * 37) +
            ", \"dur\": " + std::to_string(i % 1013) + "},\n";
  }
  return text;
}

struct Read {
  std::string text;
  std::string error;                      // empty: read to its end
  ErrorCode code = ErrorCode::kInternal;  // when error is set
};

// Everything a source gives, `piece` bytes a call at most, and the fault it stops at; the fault
// must stay (a second Read says it again).
Read ReadAll(ByteSource& source, size_t piece) {
  Read r;
  std::string buffer(piece, '\0');
  for (;;) {
    auto n = source.Read(buffer.data(), buffer.size());
    if (!n) {
      r.error = n.error().message;
      r.code = n.error().code;
      auto again = source.Read(buffer.data(), buffer.size());
      EXPECT_FALSE(again) << "a fault must stay";
      return r;
    }
    if (*n == 0) return r;
    r.text.append(buffer.data(), *n);
  }
}

class GzipFileTest : public ::testing::TestWithParam<Inflater> {
 protected:
  void SetUp() override {
    if (GetParam() == Inflater::kIsal) {
      if (auto available = IsalInflateAvailable(); !available) {
        GTEST_SKIP() << "ISA-L's inflate is not here: " << available.error().message;
      }
    }
  }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_.File(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  Read ReadFile(const std::string& path, size_t piece = 1 << 18) {
    auto source = OpenMaybeGzipFile(path, GetParam());
    EXPECT_TRUE(source) << (source ? "" : source.error().message);
    if (!source) return {};
    return ReadAll(**source, piece);
  }
  testing::TempDir dir_;
};

TEST_P(GzipFileTest, PlainAndGzipReadTheSameInAnyPieces) {
  const std::string text = TraceLikeText(40000);  // about 2.6 MB
  const std::string plain = Write("a.json", text);
  const std::string gz = Write("a.json.gz", GzipMember(text));
  for (size_t piece : {size_t{7}, size_t{4096}, size_t{1} << 18, size_t{1} << 22}) {
    for (const std::string& path : {plain, gz}) {
      const Read r = ReadFile(path, piece);
      EXPECT_EQ(r.error, "") << path << " in pieces of " << piece;
      EXPECT_TRUE(r.text == text) << path << " in pieces of " << piece << ": " << r.text.size()
                                  << " bytes of " << text.size();
    }
  }
  EXPECT_EQ(ReadFile(Write("empty", "")).text, "");
  EXPECT_EQ(ReadFile(Write("one", "\x1f")).text, "\x1f");  // too short to be gzip: as it is
}

TEST_P(GzipFileTest, ConcatenatedMembersReadAsOneAndTrailingBytesAreIgnored) {
  const std::string a = TraceLikeText(3000);
  const std::string b = TraceLikeText(5000).substr(17);
  const std::string joined = GzipMember(a) + GzipMember(b) + GzipMember("");
  for (size_t piece : {size_t{7}, size_t{1} << 18}) {
    const Read r = ReadFile(Write("two.gz", joined), piece);
    EXPECT_EQ(r.error, "");
    EXPECT_TRUE(r.text == a + b) << r.text.size() << " bytes of " << (a + b).size();
  }
  // Bytes after the last member that are not a gzip member: gzread ignores them; so do we.
  const Read tail = ReadFile(Write("tail.gz", GzipMember(a) + "not gzip\n"));
  EXPECT_EQ(tail.error, "");
  EXPECT_TRUE(tail.text == a) << tail.text.size();
}

TEST_P(GzipFileTest, CutCorruptAndBadChecksumStopWithTheReasonAfterTheGoodData) {
  const std::string text = TraceLikeText(40000);
  const std::string gz = GzipMember(text);

  const std::string cut_path = Write("cut.gz", gz.substr(0, gz.size() / 2));
  const Read cut = ReadFile(cut_path);
  EXPECT_EQ(cut.error, "gzip: unexpected end of file");
  EXPECT_EQ(cut.code, ErrorCode::kCorrupt);
  EXPECT_GT(cut.text.size(), text.size() / 4);
  EXPECT_TRUE(text.starts_with(cut.text)) << "what was read before the cut is the file's";
  // However small the reads, all that could be inflated before the cut comes out first (ISA-L
  // decodes ahead into a buffer of its own, to be handed over even when the input has ended).
  for (size_t piece : {size_t{7}, size_t{4096}}) {
    const Read small = ReadFile(cut_path, piece);
    EXPECT_EQ(small.error, "gzip: unexpected end of file") << piece;
    EXPECT_EQ(small.text.size(), cut.text.size()) << "in pieces of " << piece;
  }

  const Read header_only = ReadFile(Write("header.gz", gz.substr(0, 5)));
  EXPECT_EQ(header_only.error, "gzip: unexpected end of file");
  EXPECT_EQ(header_only.text, "");

  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 8] = static_cast<char>(bad_crc[bad_crc.size() - 8] ^ 0x01);
  const Read crc = ReadFile(Write("crc.gz", bad_crc));
  EXPECT_EQ(crc.error, "gzip: incorrect data check");
  EXPECT_EQ(crc.code, ErrorCode::kCorrupt);
  EXPECT_TRUE(text.starts_with(crc.text));

  std::string corrupt = gz;
  for (size_t i = corrupt.size() / 2; i < corrupt.size() / 2 + 64; ++i) {
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5A);
  }
  const Read bad = ReadFile(Write("corrupt.gz", corrupt));
  EXPECT_EQ(bad.code, ErrorCode::kCorrupt) << bad.error;
  EXPECT_TRUE(bad.error.starts_with("gzip: ")) << bad.error;
  EXPECT_LT(bad.text.size(), text.size());
}

TEST_P(GzipFileTest, AMissingFileIsNotFound) {
  auto missing = OpenMaybeGzipFile(dir_.File("none.json.gz"), GetParam());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Inflaters, GzipFileTest,
                         ::testing::Values(Inflater::kZlib, Inflater::kIsal, Inflater::kFastest),
                         [](const ::testing::TestParamInfo<Inflater>& param) {
                           switch (param.param) {
                             case Inflater::kZlib: return std::string("Zlib");
                             case Inflater::kIsal: return std::string("Isal");
                             default: return std::string("Fastest");
                           }
                         });

}  // namespace
}  // namespace cmax::sys
