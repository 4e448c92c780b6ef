#include "endpoint/prefix_cache.hpp"

#include <algorithm>
#include <bit>

namespace cmax::endpoint {
namespace {

// FNV-1a, 64 bits: stable across runs and platforms, so keys could be compared between
// processes; collisions over a run's blocks are negligible at 64 bits.
constexpr uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

uint64_t Mix(uint64_t hash, unsigned char byte) {
  return (hash ^ byte) * kFnvPrime;
}

bool IsSpace(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');  // \t \n \v \f \r
}

// Fibonacci hashing: the slot of a key from its high bits after one multiply.
size_t Slot(uint64_t key, int shift) {
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift);
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
  if (block_tokens > 0) keys.reserve(text.size() / (block_tokens * 2) + 1);
  uint64_t hash = kFnvOffset;
  size_t count = 0;
  size_t in_block = 0;
  bool in_word = false;
  // One pass over the bytes: every full block's key is kept, then those past the last token are
  // dropped. A word ends with a space mixed in, so "ab c" and "a bc" differ.
  const auto end_word = [&] {
    in_word = false;
    if (block_tokens == 0) return;
    hash = Mix(hash, ' ');
    if (++in_block == block_tokens) {
      keys.push_back(hash);  // the running hash covers every earlier block: a prefix key
      in_block = 0;
    }
  };
  for (const char c : text) {
    if (IsSpace(c)) {
      if (in_word) end_word();
      continue;
    }
    if (!in_word) {
      in_word = true;
      ++count;
    }
    if (block_tokens > 0) hash = Mix(hash, static_cast<unsigned char>(c));
  }
  if (in_word) end_word();
  if (tokens) *tokens = count;
  const size_t cacheable = count == 0 || block_tokens == 0 ? 0 : (count - 1) / block_tokens;
  keys.resize(std::min(keys.size(), cacheable));
  return keys;
}

bool KeySet::Contains(uint64_t key) const {
  if (key == 0) return has_zero_;
  if (slots_.empty()) return false;
  const size_t mask = slots_.size() - 1;
  for (size_t i = Slot(key, shift_);; i = (i + 1) & mask) {
    if (slots_[i] == key) return true;
    if (slots_[i] == 0) return false;
  }
}

void KeySet::Insert(uint64_t key) {
  if (key == 0) {
    has_zero_ = true;
    return;
  }
  if ((used_ + 1) * 2 > slots_.size()) Grow();  // at most half full: probes stay short
  const size_t mask = slots_.size() - 1;
  for (size_t i = Slot(key, shift_);; i = (i + 1) & mask) {
    if (slots_[i] == key) return;
    if (slots_[i] == 0) {
      slots_[i] = key;
      ++used_;
      return;
    }
  }
}

void KeySet::Grow() {
  std::vector<uint64_t> old;
  old.swap(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, 0);
  shift_ = 64 - std::countr_zero(slots_.size());
  used_ = 0;
  for (const uint64_t key : old) {
    if (key != 0) Insert(key);
  }
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
  while (hit < keys.size() && seen_.Contains(keys[hit])) ++hit;
  for (size_t i = hit; i < keys.size(); ++i) seen_.Insert(keys[i]);
  const uint64_t cached = hit * block_tokens_;
  hits_.input_tokens += tokens;
  hits_.cached_tokens += cached;
  return {cached, tokens};
}

}  // namespace cmax::endpoint
