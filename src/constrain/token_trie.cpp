#include "constrain/token_trie.h"

#include <algorithm>
#include <numeric>
#include <string_view>

namespace ebb::constrain {

TokenTrie::TokenTrie(std::vector<std::string> token_bytes, std::vector<bool> excluded)
    : bytes_(std::move(token_bytes)), excluded_(std::move(excluded)) {
  // Sort the non-empty tokens by their bytes; the preorder trie follows from the sorted list:
  // each token adds the nodes past its common prefix with the previous one.
  std::vector<int32_t> order;
  for (size_t i = 0; i < bytes_.size(); ++i) {
    if (!this->excluded(static_cast<int32_t>(i))) order.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes_[static_cast<size_t>(a)] < bytes_[static_cast<size_t>(b)];
  });
  std::vector<size_t> path;  // node index of each depth of the previous token
  std::string_view prev;
  std::vector<std::vector<int32_t>> ids;  // per node
  for (const int32_t id : order) {
    const std::string_view t = bytes_[static_cast<size_t>(id)];
    size_t common = 0;
    while (common < prev.size() && common < t.size() && prev[common] == t[common]) ++common;
    path.resize(common);
    for (size_t d = common; d < t.size(); ++d) {
      path.push_back(node_byte_.size());
      node_byte_.push_back(static_cast<uint8_t>(t[d]));
      node_depth_.push_back(static_cast<int32_t>(d + 1));
      ids.emplace_back();
    }
    ids[path.back()].push_back(id);
    max_depth_ = std::max(max_depth_, static_cast<int32_t>(t.size()));
    prev = t;
  }
  const size_t n = node_byte_.size();
  subtree_end_.assign(n, static_cast<uint32_t>(n));
  // A node's subtree ends at the next node whose depth is not greater.
  std::vector<size_t> open;
  for (size_t i = 0; i < n; ++i) {
    while (!open.empty() && node_depth_[open.back()] >= node_depth_[i]) {
      subtree_end_[open.back()] = static_cast<uint32_t>(i);
      open.pop_back();
    }
    open.push_back(i);
  }
  tokens_begin_.reserve(n + 1);
  for (size_t i = 0; i < n; ++i) {
    tokens_begin_.push_back(static_cast<uint32_t>(token_ids_.size()));
    std::sort(ids[i].begin(), ids[i].end());
    token_ids_.insert(token_ids_.end(), ids[i].begin(), ids[i].end());
  }
  tokens_begin_.push_back(static_cast<uint32_t>(token_ids_.size()));
}

int32_t TokenTrie::LongestPrefixToken(std::string_view bytes) const {
  int32_t best = -1;
  size_t i = 0;
  const size_t n = num_nodes();
  for (size_t d = 0; d < bytes.size(); ++d) {
    // Find the child of the current node (or a root) with byte bytes[d]: children of a node are
    // the nodes of depth d+1 inside its subtree, each followed by its own subtree.
    const size_t end = d == 0 ? n : subtree_end_[i - 1];
    size_t c = i;
    bool found = false;
    while (c < end) {
      if (node_byte_[c] == static_cast<uint8_t>(bytes[d])) {
        found = true;
        break;
      }
      c = subtree_end_[c];
    }
    if (!found) break;
    if (tokens_begin_[c] < tokens_begin_[c + 1]) best = token_ids_[tokens_begin_[c]];
    i = c + 1;
  }
  return best;
}

size_t TokenTrie::MemoryBytes() const {
  size_t b = sizeof(*this) + bytes_.capacity() * sizeof(std::string);
  for (const auto& s : bytes_) b += s.capacity() > 15 ? s.capacity() : 0;
  return b + node_byte_.capacity() + node_depth_.capacity() * 4 + subtree_end_.capacity() * 4 +
         tokens_begin_.capacity() * 4 + token_ids_.capacity() * 4;
}

}  // namespace ebb::constrain
