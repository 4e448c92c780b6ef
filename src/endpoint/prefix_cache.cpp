#include "endpoint/prefix_cache.hpp"

#include "core/strings.hpp"

namespace cmax::endpoint {
namespace {

// FNV-1a, 64 bits: stable across runs and platforms, so keys could be compared between
// processes; collisions over a run's blocks are negligible at 64 bits.
constexpr uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

uint64_t Mix(uint64_t hash, std::string_view bytes) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

size_t CountTokens(std::string_view text) {
  size_t count = 0;
  bool in_word = false;
  for (const char c : text) {
    if (IsSpace(c)) {
      in_word = false;
    } else if (!in_word) {
      in_word = true;
      ++count;
    }
  }
  return count;
}

std::vector<uint64_t> BlockKeys(std::string_view text, size_t block_tokens, size_t* tokens) {
  std::vector<uint64_t> keys;
  uint64_t hash = kFnvOffset;
  size_t count = 0;
  size_t in_block = 0;
  size_t i = 0;
  const size_t n = text.size();
  // One pass: every full block's key is kept, then those past the last token are dropped.
  while (true) {
    while (i < n && IsSpace(text[i])) ++i;
    if (i == n) break;
    size_t end = i;
    while (end < n && !IsSpace(text[end])) ++end;
    ++count;
    if (block_tokens > 0) {
      hash = Mix(hash, text.substr(i, end - i));
      hash = Mix(hash, " ");  // a word boundary, so "ab c" and "a bc" differ
      if (++in_block == block_tokens) {
        keys.push_back(hash);  // the running hash covers every earlier block: a prefix key
        in_block = 0;
      }
    }
    i = end;
  }
  if (tokens) *tokens = count;
  const size_t cacheable = count == 0 || block_tokens == 0 ? 0 : (count - 1) / block_tokens;
  keys.resize(std::min(keys.size(), cacheable));
  return keys;
}

void PrefixCache::Touch(std::unordered_map<uint64_t, std::list<uint64_t>::iterator>::iterator it) {
  lru_.splice(lru_.begin(), lru_, it->second);
}

size_t PrefixCache::Lookup(const std::vector<uint64_t>& keys) {
  size_t hit = 0;
  for (const uint64_t key : keys) {
    const auto it = index_.find(key);
    if (it == index_.end()) break;
    Touch(it);
    ++hit;
  }
  return hit;
}

void PrefixCache::Insert(const std::vector<uint64_t>& keys) {
  if (capacity_ == 0) return;
  for (const uint64_t key : keys) {
    if (const auto it = index_.find(key); it != index_.end()) {
      Touch(it);
      continue;
    }
    if (lru_.size() >= capacity_) {
      index_.erase(lru_.back());
      lru_.pop_back();
      ++evictions_;
    }
    lru_.push_front(key);
    index_.emplace(key, lru_.begin());
  }
}

IdealCache::Added IdealCache::Add(std::string_view prompt) {
  size_t tokens = 0;
  const auto keys = BlockKeys(prompt, block_tokens_, &tokens);
  size_t hit = 0;
  while (hit < keys.size() && seen_.count(keys[hit]) != 0) ++hit;
  seen_.insert(keys.begin() + static_cast<std::ptrdiff_t>(hit), keys.end());
  const uint64_t cached = hit * block_tokens_;
  hits_.input_tokens += tokens;
  hits_.cached_tokens += cached;
  return {cached, tokens};
}

}  // namespace cmax::endpoint
