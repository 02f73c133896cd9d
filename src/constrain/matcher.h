// constrain/matcher.h — runs a Grammar over bytes: the state of one constrained sequence.
//
// The matcher is a pushdown recognizer that keeps every parse alive at once (as llama.cpp's
// grammar sampler does): its state is a set of stacks, each a persistent linked list of grammar
// positions whose top is a terminal (a byte set) waiting for the next byte. Advancing on a byte
// keeps the stacks whose terminal holds it, steps them past it and expands rule references and
// completed alternatives until every top is a terminal again. A stack that pops past the root
// rule's end makes the state accepting. Stack nodes are interned, so equal stacks are one id
// and the set never holds duplicates; ambiguity costs one stack per distinct parse, not an
// explosion.
//
// Cost: Advance is O(stacks x expansion) with a hash lookup per new node; nodes no longer
// reachable are compacted away once they outnumber the live ones 4 to 1, so a long generation
// holds memory proportional to its live stacks, not its length.
//
// Ownership: a FlatGrammar is an immutable, shareable view of a validated Grammar; a Matcher
// borrows it (it must outlive the matcher) and is owned by one sequence. Not thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "constrain/grammar.h"

namespace ebb::constrain {

// A Grammar laid out for matching: every position of every alternative gets an id; the position
// after an alternative's last symbol is an "end" position.
class FlatGrammar {
 public:
  // `grammar` must have passed Validate(). Copies what it needs.
  explicit FlatGrammar(const Grammar& grammar);

  enum Kind : uint8_t { kEnd, kTerminal, kRule };
  struct Position {
    Kind kind;
    int32_t value;  // kTerminal: index into sets(); kRule: rule id; kEnd: the rule ending
  };
  const std::vector<Position>& positions() const { return positions_; }
  const std::vector<ByteSet>& sets() const { return sets_; }
  // Start positions of rule r's alternatives: alt_starts()[alt_begin(r) .. alt_begin(r + 1)).
  int32_t alt_begin(int32_t rule) const { return rule_alt_begin_[static_cast<size_t>(rule)]; }
  const std::vector<int32_t>& alt_starts() const { return alt_starts_; }
  int32_t root() const { return root_; }
  size_t MemoryBytes() const;

 private:
  std::vector<Position> positions_;
  std::vector<ByteSet> sets_;
  std::vector<int32_t> rule_alt_begin_;  // rules + 1 entries
  std::vector<int32_t> alt_starts_;
  int32_t root_ = 0;
};

class Matcher {
 public:
  // At the start of the grammar's root rule.
  explicit Matcher(const FlatGrammar& grammar);

  // Consumes one byte. Returns false, leaving the state unchanged, when no parse allows it.
  bool Advance(uint8_t byte);
  // Consumes `bytes` all or nothing: false (state unchanged) when any byte is refused.
  bool AdvanceBytes(std::string_view bytes);
  // The text so far is a whole sentence of the grammar (the sequence may end here).
  bool IsAccepting() const { return current_.accepting; }
  // Some byte may follow.
  bool CanContinue() const { return !current_.stacks.empty(); }
  // The bytes that may follow (union over the stacks' terminals).
  ByteSet NextBytes() const;

  // A set of stacks (ids into this matcher's node pool) and whether a parse is complete: the
  // state after some bytes. Used to walk a token trie without committing (token_mask.h).
  struct State {
    std::vector<int32_t> stacks;
    bool accepting = false;
    bool exited = false;  // a stack of Isolated() popped past its position's alternative
  };
  const State& state() const { return current_; }
  // `out` = `from` advanced by `byte` (out.stacks empty and !out.accepting: refused). Nodes it
  // creates stay in the pool until Rollback.
  void Step(const State& from, uint8_t byte, State& out);
  // A state of one stack made of `positions` (top first; a stack's own positions, as
  // StackKey gives them) whose context below is unknown: popping past the last makes the state
  // `exited` instead of expanding a parent (the context-independent mask precomputation, as in
  // XGrammar's adaptive token mask cache).
  State Isolated(const std::vector<int32_t>& positions);
  // The positions of the top `depth` nodes of stack `id` (fewer when the stack is shallower).
  void StackKey(int32_t id, int depth, std::vector<int32_t>& out) const;
  // Marks the pool, so nodes made by Step after it can be dropped by Rollback(mark).
  size_t Mark() const { return nodes_.size(); }
  void Rollback(size_t mark);
  // The terminal set waiting at the top of stack `id`.
  const ByteSet& TopSet(int32_t id) const;
  // The position at the top of stack `id` and its parent stack (-1: the bottom).
  int32_t TopPosition(int32_t id) const { return nodes_[static_cast<size_t>(id)].pos; }

  size_t MemoryBytes() const;

 private:
  struct Node {
    int32_t pos;
    int32_t parent;  // -1: the bottom (popping past it completes the root); -2: unknown context
  };
  int32_t Intern(int32_t pos, int32_t parent);
  // Expands `id` until every top is a terminal, adding the stacks to `out`.
  void Expand(int32_t id, State& out);
  void Compact();

  const FlatGrammar* g_;  // not owned
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> intern_;
  State current_;
  // Expand's scratch: a worklist and per-node visit stamps.
  std::vector<int32_t> work_;
  std::vector<uint32_t> stamp_;
  uint32_t epoch_ = 0;
  size_t live_after_compact_ = 0;
};

}  // namespace ebb::constrain
