// constrain/constraint.h — an output constraint compiled for a model's vocabulary, and the
// per-sequence state that turns it into token masks.
//
// CompiledConstraint: the grammar of a JSON Schema, regex or GBNF grammar (ConstraintSpec), its
// matcher layout, and a cache of per-position token masks. Masks are computed as XGrammar does:
// for a stack whose top is grammar position p, the tokens whose bytes p's alternative accepts
// on its own (without looking below the stack's top frame) are the same in every context, so
// they are computed once per position by one walk of the token trie and kept as a bitset or an
// id list; only the few tokens that cross the end of the alternative ("uncertain": `",` or `"}`
// after a string's characters) are checked against the real stack at each step. A mask then
// costs one OR per stack plus those few checks, not a walk of the whole vocabulary.
//
// ConstraintState: one sequence's matcher over a CompiledConstraint. With a trigger (a lazy
// constraint, for tool calls under tool_choice "auto"), the state is inactive, and every token
// is allowed, until the generated text contains the trigger; the grammar then applies from the
// trigger's first byte (the trigger is matched as the grammar's start), and once it has matched
// a whole sentence that nothing can extend, the state waits for the trigger again (so a model
// can make several calls and write text between them).
//
// Ownership: a CompiledConstraint is shared (shared_ptr) by the model's constraint cache and the
// states using it; it shares the model's TokenTrie. A ConstraintState belongs to one sequence.
// Thread-safety: CompiledConstraint is safe for concurrent use (its mask cache has a mutex);
// ConstraintState is not.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "constrain/grammar.h"
#include "constrain/matcher.h"
#include "constrain/token_trie.h"

namespace ebb::constrain {

struct ConstraintSpec {
  enum class Kind { kJsonSchema, kJsonObject, kRegex, kGrammar };
  Kind kind = Kind::kJsonSchema;
  std::string text;  // the schema, regex or GBNF text ("" for kJsonObject)
  // Literal text before and after what `text` describes (tool-call markers such as
  // "<tool_call>\n" and "\n</tool_call>"): the constrained text is prefix + text's + suffix.
  std::string prefix;
  std::string suffix;
  // "": active from the first token. Else a lazy constraint: free text until the output contains
  // the trigger; the constrained text starts at the trigger's first byte, so prefix + text's
  // language must start with the trigger (Compile checks).
  std::string trigger;
  // The constraint cache's key: kind, trigger and text.
  std::string Key() const;
};

// "json_schema", "json_object", "regex", "grammar".
std::string_view KindName(ConstraintSpec::Kind kind);

class CompiledConstraint {
 public:
  // Compiles `spec` (json_schema.h, regex.h, gbnf.h) for `trie`'s vocabulary. Throws
  // ebb::Error(InvalidArgument) naming what the spec's text gets wrong.
  static std::shared_ptr<CompiledConstraint> Compile(const ConstraintSpec& spec,
                                                     std::shared_ptr<const TokenTrie> trie);

  const ConstraintSpec& spec() const { return spec_; }
  const FlatGrammar& flat() const { return flat_; }
  const TokenTrie& trie() const { return *trie_; }
  // Heap bytes held: the grammar layout plus the mask cache (which grows as positions are met).
  size_t MemoryBytes() const;
  // Positions whose masks are cached.
  size_t CachedPositions() const;

  // How many stack nodes key a cached mask. One (the top position alone, XGrammar's choice) is
  // not enough here: a character class is often a rule of its own (a string's characters), so
  // almost every token would leave that rule's alternative and be checked one by one. Keying on
  // the top few nodes keeps the tokens inside a string's body, up to its closing quote and
  // beyond, in the cached set.
  static constexpr int kKeyDepth = 6;
  // The context-independent mask of a stack whose top kKeyDepth positions are `key` (top
  // first), computed at first use.
  struct PositionMask {
    std::vector<uint64_t> accepted_bits;  // vocab bits, or empty when accepted_ids is used
    std::vector<int32_t> accepted_ids;    // when few tokens are accepted
    std::vector<int32_t> uncertain;       // tokens to check against the real stack
    size_t MemoryBytes() const;
  };
  const PositionMask& MaskAt(const std::vector<int32_t>& key) const;

  CompiledConstraint(ConstraintSpec spec, const Grammar& grammar,
                     std::shared_ptr<const TokenTrie> trie);

 private:
  PositionMask Compute(const std::vector<int32_t>& key) const;

  ConstraintSpec spec_;
  FlatGrammar flat_;
  std::shared_ptr<const TokenTrie> trie_;
  mutable std::mutex mu_;
  // unique_ptr: references handed out stay valid as the map grows.
  // Keyed by the positions' bytes.
  mutable std::unordered_map<std::string, std::unique_ptr<PositionMask>> masks_;  // GUARDED_BY(mu_)
  mutable size_t mask_bytes_ = 0;                                                 // GUARDED_BY(mu_)
};

class ConstraintState {
 public:
  explicit ConstraintState(std::shared_ptr<const CompiledConstraint> constraint);

  ConstraintSpec::Kind kind() const { return c_->spec().kind; }
  // False while a lazy constraint waits for its trigger: every token is allowed then.
  bool active() const { return active_; }
  // Sets in `mask` (vocab_size bits in 64-bit words; resized) the tokens that may come next;
  // `eos_ids` are set when the text so far is a whole sentence. All bits when inactive.
  void FillMask(std::vector<uint64_t>& mask, std::span<const int32_t> eos_ids);
  // Whether `token` may come next (cheaper than FillMask for one token: greedy's check).
  bool Allows(int32_t token, std::span<const int32_t> eos_ids);
  // Records the token the sequence took. Returns false, leaving the state unchanged, when the
  // grammar refuses it (a caller that applied the mask never sees that).
  bool Accept(int32_t token, std::span<const int32_t> eos_ids);
  // Active, the text matches a whole sentence and no byte can extend it: only EOS may follow.
  bool Complete() const;
  // The tokens that must come next whatever the model says (one continuation only: a
  // property name the schema requires, the "}" that closes an object), longest token first,
  // at most `max_tokens`. Empty when the next byte is not forced or the state is inactive.
  std::vector<int32_t> ForcedTokens(size_t max_tokens);

  size_t MemoryBytes() const { return matcher_.MemoryBytes() + window_.capacity(); }

 private:
  bool StackAllows(int32_t stack, const std::string& bytes);
  void Rearm();

  std::shared_ptr<const CompiledConstraint> c_;
  Matcher matcher_;
  bool active_ = true;
  std::string window_;  // text since the last trigger check (lazy constraints), bounded
  std::vector<Matcher::State> levels_;  // scratch
  std::vector<int32_t> key_;            // scratch
};

}  // namespace ebb::constrain
