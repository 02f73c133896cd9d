#include "constrain/matcher.h"

#include <algorithm>

namespace ebb::constrain {

FlatGrammar::FlatGrammar(const Grammar& grammar) : sets_(grammar.sets()), root_(grammar.root()) {
  const auto& rules = grammar.rules();
  rule_alt_begin_.reserve(rules.size() + 1);
  for (size_t r = 0; r < rules.size(); ++r) {
    rule_alt_begin_.push_back(static_cast<int32_t>(alt_starts_.size()));
    for (const Sequence& alt : rules[r].alternatives) {
      alt_starts_.push_back(static_cast<int32_t>(positions_.size()));
      for (const Symbol& s : alt) {
        positions_.push_back({s.is_rule ? kRule : kTerminal, s.index});
      }
      positions_.push_back({kEnd, static_cast<int32_t>(r)});
    }
  }
  rule_alt_begin_.push_back(static_cast<int32_t>(alt_starts_.size()));
}

size_t FlatGrammar::MemoryBytes() const {
  return sizeof(*this) + positions_.capacity() * sizeof(Position) +
         sets_.capacity() * sizeof(ByteSet) +
         (rule_alt_begin_.capacity() + alt_starts_.capacity()) * sizeof(int32_t);
}

Matcher::Matcher(const FlatGrammar& grammar) : g_(&grammar) {
  // A virtual stack "before the root": expanding the root rule's alternatives from the bottom.
  const int32_t root = g_->root();
  for (int32_t a = g_->alt_begin(root); a < g_->alt_begin(root + 1); ++a) {
    Expand(Intern(g_->alt_starts()[static_cast<size_t>(a)], -1), current_);
  }
  live_after_compact_ = nodes_.size();
}

int32_t Matcher::Intern(int32_t pos, int32_t parent) {
  const uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent + 2);
  auto [it, added] = intern_.emplace(key, static_cast<int32_t>(nodes_.size()));
  if (added) nodes_.push_back({pos, parent});
  return it->second;
}

void Matcher::Expand(int32_t id, State& out) {
  // Stamps mark nodes already expanded in this call (duplicates and shared tails).
  if (++epoch_ == 0) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    epoch_ = 1;
  }
  work_.clear();
  work_.push_back(id);
  const auto& positions = g_->positions();
  const auto& starts = g_->alt_starts();
  while (!work_.empty()) {
    const int32_t n = work_.back();
    work_.pop_back();
    if (stamp_.size() < nodes_.size()) stamp_.resize(nodes_.size() * 2, 0);
    if (stamp_[static_cast<size_t>(n)] == epoch_) continue;
    stamp_[static_cast<size_t>(n)] = epoch_;
    const Node node = nodes_[static_cast<size_t>(n)];
    const FlatGrammar::Position& p = positions[static_cast<size_t>(node.pos)];
    switch (p.kind) {
      case FlatGrammar::kTerminal:
        if (std::find(out.stacks.begin(), out.stacks.end(), n) == out.stacks.end()) {
          out.stacks.push_back(n);
        }
        break;
      case FlatGrammar::kEnd:
        if (node.parent == -1) {
          out.accepting = true;
        } else if (node.parent == -2) {
          out.exited = true;
        } else {
          work_.push_back(node.parent);  // the parent's position is already its continuation
        }
        break;
      case FlatGrammar::kRule: {
        // A reference at the end of its alternative is a tail call: continue straight in the
        // parent, so right recursion (x* as `star ::= x star | ε`) keeps the stack flat.
        const int32_t cont = positions[static_cast<size_t>(node.pos) + 1].kind == FlatGrammar::kEnd
                                 ? node.parent
                                 : Intern(node.pos + 1, node.parent);
        for (int32_t a = g_->alt_begin(p.value); a < g_->alt_begin(p.value + 1); ++a) {
          work_.push_back(Intern(starts[static_cast<size_t>(a)], cont));
        }
        break;
      }
    }
  }
}

void Matcher::Step(const State& from, uint8_t byte, State& out) {
  out.stacks.clear();
  out.accepting = false;
  out.exited = false;
  const auto& positions = g_->positions();
  const auto& sets = g_->sets();
  for (const int32_t s : from.stacks) {
    const Node node = nodes_[static_cast<size_t>(s)];
    const FlatGrammar::Position& p = positions[static_cast<size_t>(node.pos)];
    if (!sets[static_cast<size_t>(p.value)].test(byte)) continue;
    Expand(Intern(node.pos + 1, node.parent), out);
  }
}

bool Matcher::Advance(uint8_t byte) {
  State next;
  Step(current_, byte, next);
  if (next.stacks.empty() && !next.accepting) return false;
  current_ = std::move(next);
  if (nodes_.size() > 4096 && nodes_.size() > 4 * live_after_compact_) Compact();
  return true;
}

bool Matcher::AdvanceBytes(std::string_view bytes) {
  State state = current_;
  State next;
  for (const char c : bytes) {
    Step(state, static_cast<uint8_t>(c), next);
    if (next.stacks.empty() && !next.accepting) return false;
    std::swap(state, next);
  }
  current_ = std::move(state);
  if (nodes_.size() > 4096 && nodes_.size() > 4 * live_after_compact_) Compact();
  return true;
}

ByteSet Matcher::NextBytes() const {
  ByteSet out;
  for (const int32_t s : current_.stacks) out |= TopSet(s);
  return out;
}

const ByteSet& Matcher::TopSet(int32_t id) const {
  const Node& node = nodes_[static_cast<size_t>(id)];
  return g_->sets()[static_cast<size_t>(g_->positions()[static_cast<size_t>(node.pos)].value)];
}

Matcher::State Matcher::Isolated(const std::vector<int32_t>& positions) {
  // Bottom up: the deepest known node's parent is the unknown context (-2).
  int32_t node = -2;
  for (auto it = positions.rbegin(); it != positions.rend(); ++it) node = Intern(*it, node);
  State s;
  Expand(node, s);
  return s;
}

void Matcher::StackKey(int32_t id, int depth, std::vector<int32_t>& out) const {
  out.clear();
  for (int32_t n = id; n >= 0 && static_cast<int>(out.size()) < depth;
       n = nodes_[static_cast<size_t>(n)].parent) {
    out.push_back(nodes_[static_cast<size_t>(n)].pos);
  }
}

void Matcher::Rollback(size_t mark) {
  for (size_t i = mark; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    intern_.erase((static_cast<uint64_t>(static_cast<uint32_t>(n.pos)) << 32) |
                  static_cast<uint32_t>(n.parent + 2));
  }
  nodes_.resize(mark);
}

void Matcher::Compact() {
  // Copy the nodes reachable from the current stacks into a fresh pool, parents first.
  std::vector<Node> old = std::move(nodes_);
  nodes_.clear();
  intern_.clear();
  constexpr int32_t kNotCopied = -3;
  std::vector<int32_t> remap(old.size(), kNotCopied);
  std::vector<int32_t> chain;
  auto copy = [&](int32_t id) {
    chain.clear();
    for (int32_t n = id; n >= 0 && remap[static_cast<size_t>(n)] == kNotCopied;
         n = old[static_cast<size_t>(n)].parent) {
      chain.push_back(n);
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Node& o = old[static_cast<size_t>(*it)];
      const int32_t parent = o.parent < 0 ? o.parent : remap[static_cast<size_t>(o.parent)];
      remap[static_cast<size_t>(*it)] = Intern(o.pos, parent);
    }
    return remap[static_cast<size_t>(id)];
  };
  for (int32_t& s : current_.stacks) s = copy(s);
  live_after_compact_ = nodes_.size();
  std::fill(stamp_.begin(), stamp_.end(), 0);
  epoch_ = 0;
}

size_t Matcher::MemoryBytes() const {
  return sizeof(*this) + nodes_.capacity() * sizeof(Node) + intern_.size() * 32 +
         (current_.stacks.capacity() + work_.capacity()) * sizeof(int32_t) +
         stamp_.capacity() * sizeof(uint32_t);
}

}  // namespace ebb::constrain
