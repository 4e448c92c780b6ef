// A prompt prefix cache over fixed-size token blocks, as vLLM's automatic prefix caching and
// SGLang's radix cache keep one, for serve-sim and for the ideal hit rate a workload allows.
// A token here is a whitespace-separated word: serve-sim counts words, and the workloads cmax
// generates are words, so the two agree exactly (a real server's tokenizer counts differently;
// its own usage report is what a run against it believes).
// Block i's key hashes block i's words and the key of block i-1, so equal keys mean an equal
// prefix. Only full blocks before the prompt's last token are cached: a server must compute at
// least the last token itself, so even a fully repeated prompt leaves one block uncached when
// its length is a multiple of the block size. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cmax::endpoint {

size_t CountTokens(std::string_view text);

// The keys of the cacheable blocks of a prompt; `tokens`, if given, gets its token count.
std::vector<uint64_t> BlockKeys(std::string_view text, size_t block_tokens,
                                size_t* tokens = nullptr);

class PrefixCache {
 public:
  // capacity_blocks 0 means no cache at all.
  PrefixCache(size_t block_tokens, size_t capacity_blocks)
      : block_tokens_(block_tokens), capacity_(capacity_blocks) {}
  size_t BlockTokens() const { return block_tokens_; }
  // How many leading blocks are cached; they become the most recently used.
  size_t Lookup(const std::vector<uint64_t>& keys);
  // Caches every block, evicting the least recently used when full.
  void Insert(const std::vector<uint64_t>& keys);
  size_t Size() const { return lru_.size(); }
  size_t Evictions() const { return evictions_; }

 private:
  void Touch(std::unordered_map<uint64_t, std::list<uint64_t>::iterator>::iterator it);
  size_t block_tokens_;
  size_t capacity_;
  std::list<uint64_t> lru_;  // front: most recent
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> index_;
  size_t evictions_ = 0;
};

// A set of 64-bit keys in one array (open addressing, linear probing): no allocation per key
// and a lookup touches one or two cache lines, where std::unordered_set allocates a node per key
// and follows a pointer per lookup (the ideal cache of a long run holds millions of keys).
// 0 marks an empty slot, so key 0 is kept apart.
class KeySet {
 public:
  bool Contains(uint64_t key) const;
  void Insert(uint64_t key);
  size_t Size() const { return used_ + (has_zero_ ? 1 : 0); }

 private:
  void Grow();
  std::vector<uint64_t> slots_;  // a power of two in size
  int shift_ = 64;               // 64 - log2(size): a key's slot is its hash's top bits
  size_t used_ = 0;
  bool has_zero_ = false;
};

// What a cache without eviction would have hit, prompts taken in order: the hit rate a
// workload allows at best, reported next to the measured one.
struct IdealHits {
  uint64_t input_tokens = 0;
  uint64_t cached_tokens = 0;
  double Rate() const {
    return input_tokens == 0
               ? 0
               : static_cast<double>(cached_tokens) / static_cast<double>(input_tokens);
  }
};
class IdealCache {
 public:
  explicit IdealCache(size_t block_tokens) : block_tokens_(block_tokens) {}
  struct Added {
    uint64_t cached_tokens = 0;  // what an infinite cache would have had of this prompt
    uint64_t tokens = 0;
  };
  Added Add(std::string_view prompt);
  const IdealHits& Hits() const { return hits_; }

 private:
  size_t block_tokens_;
  KeySet seen_;  // nothing is ever evicted: no recency to keep
  IdealHits hits_;
};

}  // namespace cmax::endpoint
