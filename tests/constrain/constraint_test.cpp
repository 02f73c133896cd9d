// Token masks against a brute-force reference: for every token, a fresh matcher fed the text so
// far plus the token's bytes decides whether the token may come next. The mask cache, the trie
// walk and the uncertain-token checks must agree with it at every step of random walks.
#include "constrain/constraint.h"

#include <gtest/gtest.h>

#include <random>

#include "constrain/grammar.h"
#include "constrain/matcher.h"
#include "ebb/error.h"

namespace ebb::constrain {
namespace {

// root ::= "{" "\"k\":" value ("," "\"k\":" value)* "}"
// value ::= "\"" char* "\"" | digit+ | "[" (value ("," value)*)? "]"
Grammar SmallJsonLike() {
  Grammar g;
  const int32_t root = g.AddRule("root");
  const int32_t value = g.AddRule("value");
  const int32_t chr = g.AddRule("char");
  g.AddAlternative(chr, {g.ByteRange('a', 'c')});
  g.AddAlternative(chr, {g.Byte('\\'), g.Byte('"')});
  std::vector<Sequence> utf8;
  g.AppendCodepointAlternatives({{0xE9, 0xE9}, {0x1F600, 0x1F600}}, utf8);
  for (auto& s : utf8) g.AddAlternative(chr, s);
  const int32_t chars = g.Repeat(Symbol::Rule(chr), 0, -1, "chars");
  Sequence str{g.Byte('"'), Symbol::Rule(chars), g.Byte('"')};
  g.AddAlternative(value, str);
  g.AddAlternative(value, {Symbol::Rule(g.Repeat(g.ByteRange('0', '9'), 1, -1, "digits"))});
  const int32_t more_values = g.AddRule("more-values");
  g.AddAlternative(more_values, {g.Byte(','), Symbol::Rule(value), Symbol::Rule(more_values)});
  g.AddAlternative(more_values, {});
  const int32_t items = g.AddRule("items");
  g.AddAlternative(items, {Symbol::Rule(value), Symbol::Rule(more_values)});
  g.AddAlternative(items, {});
  g.AddAlternative(value, {g.Byte('['), Symbol::Rule(items), g.Byte(']')});
  const int32_t member = g.AddRule("member");
  Sequence m;
  g.AppendLiteral(m, "\"k\":");
  m.push_back(Symbol::Rule(value));
  g.AddAlternative(member, m);
  const int32_t more = g.AddRule("more");
  g.AddAlternative(more, {g.Byte(','), Symbol::Rule(member), Symbol::Rule(more)});
  g.AddAlternative(more, {});
  g.AddAlternative(root, {g.Byte('{'), Symbol::Rule(member), Symbol::Rule(more), g.Byte('}')});
  g.set_root(root);
  g.Validate("test");
  return g;
}

// Every 1- and 2-byte string over the grammar's alphabet, some longer ones that cross rule ends,
// the UTF-8 characters split at every byte, and special tokens (excluded).
std::vector<std::string> Vocabulary() {
  const std::string alphabet = "{}[]\",:abck019\\x ";
  std::vector<std::string> v;
  for (char a : alphabet) {
    v.emplace_back(1, a);
    for (char b : alphabet) v.push_back(std::string{a, b});
  }
  for (const char* s : {"\"k\":", "\"},", "\"}", "\":\"", "abc\"", "\"k\":\"", "1,\"k\":[", "]}",
                        "\"]}", "}}", "\xC3", "\xA9", "\xC3\xA9", "\xF0\x9F", "\x98\x80",
                        "\xF0\x9F\x98\x80", "\xF0", "\x9F\x98", "a\xC3"}) {
    v.emplace_back(s);
  }
  // Byte-level vocabularies hold every byte: continuation bytes alone, so no UTF-8 character
  // is a dead end.
  for (int b = 0x80; b < 0xC0; ++b) v.emplace_back(1, static_cast<char>(b));
  v.emplace_back("<eos>");     // id set as EOS below
  v.emplace_back("<|tool|>");  // special: excluded
  return v;
}

TEST(Constraint, MasksMatchABruteForceReferenceOnRandomWalks) {
  const Grammar g = SmallJsonLike();
  std::vector<std::string> vocab = Vocabulary();
  const auto n = static_cast<int32_t>(vocab.size());
  const int32_t eos = n - 2;
  std::vector<bool> excluded(vocab.size(), false);
  excluded[static_cast<size_t>(eos)] = true;
  excluded[static_cast<size_t>(n - 1)] = true;
  auto trie = std::make_shared<TokenTrie>(vocab, excluded);
  ConstraintSpec spec;
  auto c = std::make_shared<CompiledConstraint>(spec, g, trie);
  const FlatGrammar flat(g);
  const std::vector<int32_t> eos_ids{eos};
  std::mt19937 rng(7);
  int checked = 0;
  for (int walk = 0; walk < 30; ++walk) {
    ConstraintState state(c);
    std::string text;
    for (int step = 0; step < 40; ++step) {
      std::vector<uint64_t> mask;
      state.FillMask(mask, eos_ids);
      std::vector<int32_t> allowed;
      for (int32_t t = 0; t < n; ++t) {
        bool want;
        if (t == eos) {
          Matcher m(flat);
          want = m.AdvanceBytes(text) && m.IsAccepting();
        } else if (excluded[static_cast<size_t>(t)]) {
          want = false;
        } else {
          Matcher m(flat);
          want = m.AdvanceBytes(text + vocab[static_cast<size_t>(t)]);
        }
        const bool got = (mask[static_cast<size_t>(t) / 64] >> (t % 64)) & 1;
        ASSERT_EQ(got, want) << "token '" << vocab[static_cast<size_t>(t)] << "' after '" << text
                             << "'";
        ASSERT_EQ(state.Allows(t, eos_ids), want) << vocab[static_cast<size_t>(t)];
        if (want) allowed.push_back(t);
        ++checked;
      }
      ASSERT_FALSE(allowed.empty()) << "dead end after '" << text << "'";
      // Prefer closing once the text is long, so walks also reach EOS.
      int32_t pick = allowed[rng() % allowed.size()];
      if (step > 25 && std::find(allowed.begin(), allowed.end(), eos) != allowed.end()) pick = eos;
      ASSERT_TRUE(state.Accept(pick, eos_ids));
      if (pick == eos) break;
      text += vocab[static_cast<size_t>(pick)];
    }
  }
  EXPECT_GT(checked, 10000);
  EXPECT_GT(c->CachedPositions(), 3u);
  EXPECT_GT(c->MemoryBytes(), 0u);
}

TEST(Constraint, RefusedTokensLeaveTheStateUnchanged) {
  const Grammar g = SmallJsonLike();
  auto trie = std::make_shared<TokenTrie>(Vocabulary());
  auto c = std::make_shared<CompiledConstraint>(ConstraintSpec{}, g, trie);
  ConstraintState state(c);
  const int32_t open = trie->LongestPrefixToken("{");
  const int32_t close = trie->LongestPrefixToken("}");
  EXPECT_FALSE(state.Accept(close, {}));
  EXPECT_TRUE(state.Accept(open, {}));
  EXPECT_FALSE(state.Accept(open, {}));
  EXPECT_FALSE(state.Complete());
}

TEST(Constraint, ForcedTokensCoverTheOnlyContinuation) {
  const Grammar g = SmallJsonLike();
  auto trie = std::make_shared<TokenTrie>(Vocabulary());
  auto c = std::make_shared<CompiledConstraint>(ConstraintSpec{}, g, trie);
  ConstraintState state(c);
  // At the start only `{"k":` can come: the longest token for it is `{"` then `k"` then `:`.
  const std::vector<int32_t> forced = state.ForcedTokens(16);
  std::string text;
  for (int32_t t : forced) text += trie->token_bytes(t);
  EXPECT_EQ(text, "{\"k\":");
  for (int32_t t : forced) ASSERT_TRUE(state.Accept(t, {}));
  EXPECT_TRUE(state.ForcedTokens(16).empty());  // a value: several bytes may follow
}

TEST(Constraint, ALazyConstraintWaitsForItsTriggerAndRearms) {
  const Grammar g = SmallJsonLike();
  auto trie = std::make_shared<TokenTrie>(Vocabulary());
  ConstraintSpec spec;
  spec.trigger = "x ";
  // The constrained text starts at the trigger: a grammar for "x " followed by the object.
  Grammar wrapped = g;
  const int32_t root = wrapped.AddRule("wrapped");
  Sequence seq;
  wrapped.AppendLiteral(seq, "x ");
  seq.push_back(Symbol::Rule(g.root()));
  wrapped.AddAlternative(root, seq);
  wrapped.set_root(root);
  wrapped.Validate("test");
  auto c = std::make_shared<CompiledConstraint>(spec, wrapped, trie);
  ConstraintState state(c);
  auto tok = [&](std::string_view s) {
    const int32_t t = trie->LongestPrefixToken(s);
    EXPECT_EQ(trie->token_bytes(t), s);
    return t;
  };
  EXPECT_FALSE(state.active());
  EXPECT_TRUE(state.Allows(tok("}}"), {}));  // free text before the trigger
  ASSERT_TRUE(state.Accept(tok("ab"), {}));
  ASSERT_TRUE(state.Accept(tok("x"), {}));
  EXPECT_FALSE(state.active());
  ASSERT_TRUE(state.Accept(tok(" {"), {}));  // the trigger's end and the grammar's start
  EXPECT_TRUE(state.active());
  EXPECT_FALSE(state.Allows(tok("}}"), {}));
  for (const char* s : {"\"k\":", "1"}) ASSERT_TRUE(state.Accept(tok(s), {})) << s;
  ASSERT_TRUE(state.Accept(tok("}"), {}));
  EXPECT_FALSE(state.active());  // complete: waits for the trigger again
  EXPECT_TRUE(state.Allows(tok("}}"), {}));
}

TEST(Grammar, ValidateNamesTheBrokenRule) {
  Grammar g;
  const int32_t a = g.AddRule("a");
  g.AddAlternative(a, {g.Byte('x'), Symbol::Rule(a)});
  g.set_root(a);
  try {
    g.Validate("grammar");
    FAIL() << "accepted a rule that never ends";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rule 'a' never ends"), std::string::npos) << e.what();
  }
  Grammar l;
  const int32_t b = l.AddRule("b");
  const int32_t e = l.AddRule("e");
  l.AddAlternative(e, {});
  l.AddAlternative(b, {Symbol::Rule(e), Symbol::Rule(b), l.Byte('x')});
  l.AddAlternative(b, {l.Byte('y')});
  l.set_root(b);
  EXPECT_THROW(l.Validate("grammar"), Error);  // left recursion through a nullable rule
  Grammar big;
  EXPECT_THROW(big.Repeat(big.Byte('a'), 0, Grammar::kMaxRepeat + 1), Error);
}

TEST(Grammar, CodepointRangesAcceptExactlyWellFormedUtf8) {
  Grammar g;
  g.set_root(g.AddCodepointRange(0x80, 0x10FFFF));
  g.Validate("t");
  EXPECT_TRUE(Matches(g, "\xC2\x80"));
  EXPECT_TRUE(Matches(g, "\xE2\x82\xAC"));       // €
  EXPECT_TRUE(Matches(g, "\xF4\x8F\xBF\xBF"));   // U+10FFFF
  EXPECT_FALSE(Matches(g, "a"));                 // below the range
  EXPECT_FALSE(Matches(g, "\xC0\x80"));          // overlong
  EXPECT_FALSE(Matches(g, "\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(Matches(g, "\xF4\x90\x80\x80"));  // above U+10FFFF
  // Every code point of a mixed set, and nothing next to it.
  Grammar h;
  std::vector<Sequence> alts;
  h.AppendCodepointAlternatives({{0x41, 0x5A}, {0x3B1, 0x3C9}, {0x4E00, 0x4E0F}}, alts);
  h.set_root(h.Choice(alts));
  h.Validate("t");
  EXPECT_TRUE(Matches(h, "Q"));
  EXPECT_TRUE(Matches(h, "\xCE\xB1"));       // α
  EXPECT_FALSE(Matches(h, "\xCE\xB0"));      // ΰ, just below
  EXPECT_TRUE(Matches(h, "\xE4\xB8\x8F"));   // U+4E0F
  EXPECT_FALSE(Matches(h, "\xE4\xB8\x90"));  // U+4E10
}

TEST(Matcher, LongGenerationsCompactTheNodePool) {
  Grammar g;
  g.set_root(g.Repeat(g.ByteRange('a', 'b'), 0, -1));
  g.Validate("t");
  const FlatGrammar flat(g);
  Matcher m(flat);
  for (int i = 0; i < 200000; ++i) ASSERT_TRUE(m.Advance('a'));
  EXPECT_LT(m.MemoryBytes(), size_t{1} << 20);
  EXPECT_TRUE(m.IsAccepting());
}

}  // namespace
}  // namespace ebb::constrain
