#include "constrain/constraint.h"

#include <algorithm>

#include "constrain/gbnf.h"
#include "constrain/json_schema.h"
#include "constrain/regex.h"
#include "ebb/error.h"

namespace ebb::constrain {

namespace {

bool IsEos(int32_t token, std::span<const int32_t> eos_ids) {
  return std::find(eos_ids.begin(), eos_ids.end(), token) != eos_ids.end();
}

void SetBit(std::vector<uint64_t>& bits, int32_t id) {
  bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (static_cast<unsigned>(id) & 63);
}

bool TestBit(const std::vector<uint64_t>& bits, int32_t id) {
  return (bits[static_cast<size_t>(id) >> 6] >> (static_cast<unsigned>(id) & 63)) & 1;
}

}  // namespace

std::string ConstraintSpec::Key() const {
  return std::string(KindName(kind)) + '\0' + trigger + '\0' + prefix + '\0' + suffix + '\0' + text;
}

std::string_view KindName(ConstraintSpec::Kind kind) {
  switch (kind) {
    case ConstraintSpec::Kind::kJsonSchema:
      return "json_schema";
    case ConstraintSpec::Kind::kJsonObject:
      return "json_object";
    case ConstraintSpec::Kind::kRegex:
      return "regex";
    case ConstraintSpec::Kind::kGrammar:
      return "grammar";
  }
  return "?";
}

std::shared_ptr<CompiledConstraint> CompiledConstraint::Compile(
    const ConstraintSpec& spec, std::shared_ptr<const TokenTrie> trie) {
  Grammar g;
  switch (spec.kind) {
    case ConstraintSpec::Kind::kJsonSchema:
      g = CompileJsonSchema(spec.text);
      break;
    case ConstraintSpec::Kind::kJsonObject:
      g = AnyJsonObjectGrammar();
      break;
    case ConstraintSpec::Kind::kRegex: {
      if (spec.text.empty()) {
        throw Error(ErrorCode::InvalidArgument,
                    "regex: the pattern is empty; give the regular expression the output must "
                    "match");
      }
      const int32_t root = CompileRegex(g, spec.text, RegexOptions{});
      g.set_root(root);
      g.Validate("regex");
      break;
    }
    case ConstraintSpec::Kind::kGrammar:
      g = ParseGbnf(spec.text);
      break;
  }
  if (!spec.prefix.empty() || !spec.suffix.empty()) {
    const int32_t root = g.AddRule("constrained");
    Sequence s;
    g.AppendLiteral(s, spec.prefix);
    s.push_back(Symbol::Rule(g.root()));
    g.AppendLiteral(s, spec.suffix);
    g.AddAlternative(root, std::move(s));
    g.set_root(root);
    g.Validate(KindName(spec.kind));
  }
  auto c = std::make_shared<CompiledConstraint>(spec, g, std::move(trie));
  if (!spec.trigger.empty()) {
    Matcher m(c->flat());
    if (!m.AdvanceBytes(spec.trigger)) {
      throw Error(ErrorCode::InvalidArgument,
                  "constraint_trigger \"" + spec.trigger +
                      "\" is not how the constrained text starts: the text is matched from the "
                      "trigger's first byte, so begin constraint_prefix (or the " +
                      std::string(KindName(spec.kind)) + ") with it");
    }
  }
  return c;
}

CompiledConstraint::CompiledConstraint(ConstraintSpec spec, const Grammar& grammar,
                                       std::shared_ptr<const TokenTrie> trie)
    : spec_(std::move(spec)), flat_(grammar), trie_(std::move(trie)) {}

size_t CompiledConstraint::PositionMask::MemoryBytes() const {
  return sizeof(*this) + accepted_bits.capacity() * 8 + accepted_ids.capacity() * 4 +
         uncertain.capacity() * 4;
}

size_t CompiledConstraint::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sizeof(*this) + flat_.MemoryBytes() + spec_.text.capacity() + mask_bytes_ +
         masks_.size() * 48;
}

size_t CompiledConstraint::CachedPositions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return masks_.size();
}

const CompiledConstraint::PositionMask& CompiledConstraint::MaskAt(
    const std::vector<int32_t>& key) const {
  const std::string k(reinterpret_cast<const char*>(key.data()), key.size() * sizeof(int32_t));
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = masks_.find(k);
    if (it != masks_.end()) return *it->second;
  }
  // Computed outside the lock (a trie walk may take milliseconds); a concurrent computation of
  // the same position wastes work but stores the same result once.
  auto mask = std::make_unique<PositionMask>(Compute(key));
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = masks_.emplace(k, nullptr);
  if (added) {
    mask_bytes_ += mask->MemoryBytes() + k.capacity();
    it->second = std::move(mask);
  }
  return *it->second;
}

CompiledConstraint::PositionMask CompiledConstraint::Compute(
    const std::vector<int32_t>& key) const {
  const TokenTrie& trie = *trie_;
  const size_t vocab = trie.vocab_size();
  std::vector<uint64_t> accepted((vocab + 63) / 64, 0);
  std::vector<uint64_t> maybe((vocab + 63) / 64, 0);
  Matcher m(flat_);
  std::vector<Matcher::State> levels(static_cast<size_t>(trie.max_depth()) + 1);
  levels[0] = m.Isolated(key);
  const auto& ids = trie.token_ids();
  const size_t n = trie.num_nodes();
  for (size_t i = 0; i < n;) {
    const auto d = static_cast<size_t>(trie.node_depth(i));
    Matcher::State& here = levels[d];
    m.Step(levels[d - 1], trie.node_byte(i), here);
    if (here.stacks.empty() && !here.exited) {
      i = trie.subtree_end(i);
      continue;
    }
    for (uint32_t k = trie.tokens_begin(i); k < trie.tokens_begin(i + 1); ++k) {
      SetBit(accepted, ids[k]);
    }
    if (here.exited) {
      // Longer tokens through here continue in the unknown context: check them per step.
      for (size_t j = i + 1; j < trie.subtree_end(i); ++j) {
        for (uint32_t k = trie.tokens_begin(j); k < trie.tokens_begin(j + 1); ++k) {
          SetBit(maybe, ids[k]);
        }
      }
    }
    if (here.stacks.empty()) {
      i = trie.subtree_end(i);
    } else {
      ++i;
    }
  }
  PositionMask out;
  size_t count = 0;
  for (size_t w = 0; w < accepted.size(); ++w) {
    count += static_cast<size_t>(__builtin_popcountll(accepted[w]));
    const uint64_t u = maybe[w] & ~accepted[w];
    for (int b = 0; b < 64; ++b) {
      if ((u >> b) & 1) out.uncertain.push_back(static_cast<int32_t>(w * 64 + b));
    }
  }
  // An id list is smaller than the bitset below one token in 32.
  if (count * 32 < vocab) {
    for (size_t w = 0; w < accepted.size(); ++w) {
      for (int b = 0; b < 64; ++b) {
        if ((accepted[w] >> b) & 1) out.accepted_ids.push_back(static_cast<int32_t>(w * 64 + b));
      }
    }
  } else {
    out.accepted_bits = std::move(accepted);
  }
  return out;
}

ConstraintState::ConstraintState(std::shared_ptr<const CompiledConstraint> constraint)
    : c_(std::move(constraint)),
      matcher_(c_->flat()),
      active_(c_->spec().trigger.empty()),
      levels_(2) {}

bool ConstraintState::StackAllows(int32_t stack, const std::string& bytes) {
  const size_t mark = matcher_.Mark();
  levels_[0].stacks.assign(1, stack);
  levels_[0].accepting = false;
  bool ok = true;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (levels_[0].stacks.empty()) {  // a whole sentence with bytes left over
      ok = false;
      break;
    }
    matcher_.Step(levels_[0], static_cast<uint8_t>(bytes[i]), levels_[1]);
    if (levels_[1].stacks.empty() && !levels_[1].accepting) {
      ok = false;
      break;
    }
    std::swap(levels_[0], levels_[1]);
  }
  matcher_.Rollback(mark);
  return ok;
}

void ConstraintState::FillMask(std::vector<uint64_t>& mask, std::span<const int32_t> eos_ids) {
  const size_t vocab = c_->trie().vocab_size();
  const size_t words = (vocab + 63) / 64;
  if (!active_) {
    mask.assign(words, ~uint64_t{0});
    return;
  }
  mask.assign(words, 0);
  for (const int32_t s : matcher_.state().stacks) {
    matcher_.StackKey(s, CompiledConstraint::kKeyDepth, key_);
    const auto& pm = c_->MaskAt(key_);
    if (!pm.accepted_bits.empty()) {
      for (size_t w = 0; w < words; ++w) mask[w] |= pm.accepted_bits[w];
    } else {
      for (const int32_t id : pm.accepted_ids) SetBit(mask, id);
    }
    for (const int32_t id : pm.uncertain) {
      if (!TestBit(mask, id) && StackAllows(s, c_->trie().token_bytes(id))) SetBit(mask, id);
    }
  }
  if (matcher_.IsAccepting()) {
    for (const int32_t e : eos_ids) {
      if (e >= 0 && static_cast<size_t>(e) < vocab) SetBit(mask, e);
    }
  }
}

bool ConstraintState::Allows(int32_t token, std::span<const int32_t> eos_ids) {
  if (!active_) return true;
  if (IsEos(token, eos_ids)) return matcher_.IsAccepting();
  if (token < 0 || static_cast<size_t>(token) >= c_->trie().vocab_size()) return false;
  if (c_->trie().excluded(token)) return false;
  const std::string& bytes = c_->trie().token_bytes(token);
  for (const int32_t s : matcher_.state().stacks) {
    if (StackAllows(s, bytes)) return true;
  }
  return false;
}

bool ConstraintState::Accept(int32_t token, std::span<const int32_t> eos_ids) {
  const bool eos = IsEos(token, eos_ids);
  if (!active_) {
    if (eos || token < 0 || static_cast<size_t>(token) >= c_->trie().vocab_size()) return true;
    // Special tokens have no grammar bytes but their text can still be a trigger.
    window_ += c_->trie().token_bytes(token);
    const std::string& trigger = c_->spec().trigger;
    const size_t at = window_.find(trigger);
    if (at == std::string::npos) {
      // Keep only what could still be the start of the trigger.
      if (window_.size() > trigger.size()) window_.erase(0, window_.size() - trigger.size());
      return true;
    }
    active_ = true;
    // The grammar starts with the trigger: it takes the trigger and what followed it in the
    // same token. If it cannot (the token ran on past what the grammar allows), the constraint
    // takes the trigger alone and constrains from the next token.
    const std::string from_trigger = window_.substr(at);
    window_.clear();
    if (!matcher_.AdvanceBytes(from_trigger)) matcher_.AdvanceBytes(trigger);
    if (Complete()) Rearm();
    return true;
  }
  if (eos) return matcher_.IsAccepting();
  if (!Allows(token, eos_ids)) return false;
  matcher_.AdvanceBytes(c_->trie().token_bytes(token));
  if (Complete() && !c_->spec().trigger.empty()) Rearm();
  return true;
}

void ConstraintState::Rearm() {
  matcher_ = Matcher(c_->flat());
  active_ = false;
  window_.clear();
}

bool ConstraintState::Complete() const {
  return active_ && matcher_.IsAccepting() && !matcher_.CanContinue();
}

std::vector<int32_t> ConstraintState::ForcedTokens(size_t max_tokens) {
  std::vector<int32_t> out;
  if (!active_) return out;
  // The forced bytes: while the state is not accepting and exactly one byte may follow.
  std::string forced;
  Matcher probe = matcher_;
  while (forced.size() < 256 && !probe.IsAccepting()) {
    const ByteSet next = probe.NextBytes();
    if (next.count() != 1) break;
    uint8_t b = 0;
    while (!next.test(b)) ++b;
    forced.push_back(static_cast<char>(b));
    probe.Advance(b);
  }
  // Cover them with the longest tokens that are prefixes of what is left.
  std::string_view rest = forced;
  while (!rest.empty() && out.size() < max_tokens) {
    const int32_t t = c_->trie().LongestPrefixToken(rest);
    if (t < 0) break;
    out.push_back(t);
    rest.remove_prefix(c_->trie().token_bytes(t).size());
  }
  return out;
}

}  // namespace ebb::constrain
