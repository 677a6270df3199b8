// KeyGroupRange: an inclusive, contiguous range [start, end] of key groups (Flink's
// KeyGroupRange). The empty range is (0, -1). Iterates in ascending order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>

#include "common/check.h"
#include "common/types.h"

namespace keyflow {

class KeyGroupRange {
 public:
  constexpr KeyGroupRange() = default;  // empty
  // Precondition: 0 <= start, and start <= end + 1 (start == end + 1 gives the empty range).
  static KeyGroupRange Of(int32_t start, int32_t end) {
    if (start > end) return KeyGroupRange();
    KF_CHECK_GE(start, 0);
    return KeyGroupRange(start, end);
  }
  static constexpr KeyGroupRange Empty() { return KeyGroupRange(); }

  int32_t start() const { return start_; }
  int32_t end() const { return end_; }  // inclusive
  int32_t size() const { return 1 + end_ - start_; }
  bool empty() const { return size() == 0; }
  bool contains(KeyGroupId g) const { return start_ <= g.value() && g.value() <= end_; }
  // Position of `g` inside this range. Precondition: contains(g).
  int32_t IndexOf(KeyGroupId g) const { return g.value() - start_; }

  KeyGroupRange Intersection(const KeyGroupRange& o) const {
    return Of(std::max(start_, o.start_), std::min(end_, o.end_));
  }

  bool operator==(const KeyGroupRange& o) const { return start_ == o.start_ && end_ == o.end_; }

  std::string ToString() const {
    return "KeyGroupRange{start=" + std::to_string(start_) + ", end=" + std::to_string(end_) + "}";
  }
  friend std::ostream& operator<<(std::ostream& os, const KeyGroupRange& r) {
    return os << r.ToString();
  }

  class Iterator {
   public:
    explicit Iterator(int32_t g) : g_(g) {}
    KeyGroupId operator*() const { return KeyGroupId(g_); }
    Iterator& operator++() {
      ++g_;
      return *this;
    }
    bool operator==(const Iterator& o) const { return g_ == o.g_; }

   private:
    int32_t g_;
  };
  struct View {
    int32_t first, last;
    Iterator begin() const { return Iterator(first); }
    Iterator end() const { return Iterator(last + 1); }
  };
  // Ascending iteration: `for (KeyGroupId g : range.key_groups())`.
  View key_groups() const { return View{start_, end_}; }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(start_, end_);
  }

 private:
  constexpr KeyGroupRange(int32_t s, int32_t e) : start_(s), end_(e) {}
  int32_t start_ = 0;
  int32_t end_ = -1;
};

}  // namespace keyflow
