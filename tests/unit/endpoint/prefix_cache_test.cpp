// The prefix cache serve-sim keeps and the ideal hit rate a workload allows: block keys that
// mean "this whole prefix", the last-token rule, LRU eviction, and the infinite cache.
#include "endpoint/prefix_cache.hpp"

#include <gtest/gtest.h>
#include <random>
#include <string>
#include <unordered_set>

namespace cmax::endpoint {
namespace {

std::string Words(size_t n, const std::string& stem = "w") {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += (i ? " " : "") + stem + std::to_string(i);
  return out;
}

TEST(PrefixCache, TokensAreWhitespaceSeparatedWords) {
  EXPECT_EQ(CountTokens(""), 0U);
  EXPECT_EQ(CountTokens("  a\tb\n\nc  "), 3U);
  size_t tokens = 0;
  BlockKeys(" one  two\nthree ", 2, &tokens);
  EXPECT_EQ(tokens, 3U);
}

TEST(PrefixCache, OnlyFullBlocksBeforeTheLastTokenAreCacheable) {
  EXPECT_EQ(BlockKeys(Words(16), 16).size(), 0U);  // the last token is always computed
  EXPECT_EQ(BlockKeys(Words(17), 16).size(), 1U);
  EXPECT_EQ(BlockKeys(Words(33), 16).size(), 2U);
  EXPECT_EQ(BlockKeys(Words(47), 16).size(), 2U);
  EXPECT_TRUE(BlockKeys("", 16).empty());
}

TEST(PrefixCache, AKeyStandsForTheWholePrefix) {
  const auto a = BlockKeys(Words(40), 8);
  const auto b = BlockKeys(Words(40) + " more words here", 8);
  ASSERT_EQ(a.size(), 4U);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]);
  // The same second block after a different first one is a different key.
  std::string c = Words(40);
  c.replace(0, 2, "zz");
  const auto d = BlockKeys(c, 8);
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NE(a[i], d[i]);
  // Word boundaries count: "ab c" is not "a bc"; whitespace kinds do not.
  EXPECT_NE(BlockKeys("ab c x", 2), BlockKeys("a bc x", 2));
  EXPECT_EQ(BlockKeys("a  b\nx", 2), BlockKeys("a b x", 2));
}

TEST(PrefixCache, LookupStopsAtTheFirstMissAndEvictsTheLeastRecentlyUsed) {
  PrefixCache cache(4, 3);
  cache.Insert({1, 2, 3});
  EXPECT_EQ(cache.Lookup({1, 2, 3, 4}), 3U);
  EXPECT_EQ(cache.Lookup({1, 9, 3}), 1U);
  cache.Lookup({1});  // 1 is now the most recent, then 3, 2... (2 least)
  cache.Insert({7});  // evicts the least recently used
  EXPECT_EQ(cache.Size(), 3U);
  EXPECT_EQ(cache.Evictions(), 1U);
  EXPECT_EQ(cache.Lookup({1}), 1U);
  EXPECT_EQ(cache.Lookup({7}), 1U);
  EXPECT_EQ(cache.Lookup({2}), 0U);  // the one evicted
  PrefixCache none(4, 0);
  none.Insert({1});
  EXPECT_EQ(none.Lookup({1}), 0U);
}

TEST(PrefixCache, IdealCacheCountsWhatAnInfiniteCacheWouldHaveHad) {
  IdealCache ideal(4);
  const std::string shared = Words(12);
  EXPECT_EQ(ideal.Add(shared + " a b c d e").cached_tokens, 0U);
  // 12 shared words = 3 blocks of 4; the rest differs.
  const auto second = ideal.Add(shared + " x y z w v");
  EXPECT_EQ(second.cached_tokens, 12U);
  EXPECT_EQ(second.tokens, 17U);
  EXPECT_EQ(ideal.Hits().input_tokens, 34U);
  EXPECT_EQ(ideal.Hits().cached_tokens, 12U);
  EXPECT_DOUBLE_EQ(ideal.Hits().Rate(), 12.0 / 34.0);
}

TEST(PrefixCache, BlockKeysAreStableFnv1aOfTheWordsEachFollowedByASpace) {
  // Keys are the same in every process and release (they could be compared across runs): the
  // 64-bit FNV-1a of "one two " and then of "one two three four ", whatever the whitespace.
  const std::vector<uint64_t> expected = {202285988435948531ULL, 382204880071080725ULL};
  EXPECT_EQ(BlockKeys("one two three four five", 2), expected);
  EXPECT_EQ(BlockKeys("\tone\n two  three\r\nfour\ffive\v", 2), expected);
}

TEST(PrefixCache, KeySetAgreesWithAStandardSet) {
  // Random keys with repeats, 0 among them, and keys that share their slot bits (multiples of a
  // power of two): the set must grow, probe past collisions and keep 0 apart.
  KeySet keys;
  std::unordered_set<uint64_t> expected;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t key = i % 5 == 0 ? (rng() % 64) << 40 : rng() % 30000;
    EXPECT_EQ(keys.Contains(key), expected.count(key) == 1) << key;
    keys.Insert(key);
    expected.insert(key);
    EXPECT_TRUE(keys.Contains(key));
  }
  EXPECT_EQ(keys.Size(), expected.size());
  EXPECT_TRUE(keys.Contains(0));
  for (uint64_t probe = 30000; probe < 31000; ++probe) EXPECT_FALSE(keys.Contains(probe));
  EXPECT_FALSE(KeySet().Contains(0));
  EXPECT_FALSE(KeySet().Contains(12));
}

}  // namespace
}  // namespace cmax::endpoint
