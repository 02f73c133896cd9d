#include "tokenizer/pre_tokenizer.h"

#include <string>
#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace ebb::tok {

const char* const kGpt2SplitRegex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

namespace {

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Behavior ParseBehavior(const JsonRef& j) {
  const std::string b = j.String();
  if (b == "Removed") return Behavior::kRemoved;
  if (b == "Isolated") return Behavior::kIsolated;
  if (b == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::kMergedWithNext;
  if (b == "Contiguous") return Behavior::kContiguous;
  j.Fail("unsupported split behavior \"" + b + "\"");
}

struct Segment {
  size_t begin, end;
  bool is_match;
};

// Emits the pieces of `s` described by `segs` (which cover s in order) under `behavior`.
void EmitSegments(std::string_view s, bool at_start, std::vector<Segment>& segs, Behavior behavior,
                  PieceList& out) {
  auto emit = [&](size_t b, size_t e) { out.Add(s.substr(b, e - b), at_start && b == 0); };
  switch (behavior) {
    case Behavior::kRemoved:
      for (const Segment& g : segs)
        if (!g.is_match) emit(g.begin, g.end);
      return;
    case Behavior::kIsolated:
      for (const Segment& g : segs) emit(g.begin, g.end);
      return;
    case Behavior::kContiguous:
    case Behavior::kMergedWithPrevious: {
      std::vector<Segment> acc;
      bool prev_match = false;
      for (const Segment& g : segs) {
        bool merge = behavior == Behavior::kContiguous ? g.is_match == prev_match
                                                       : (g.is_match && !prev_match);
        if (merge && !acc.empty()) {
          acc.back().end = g.end;
        } else {
          acc.push_back(g);
        }
        prev_match = g.is_match;
      }
      for (const Segment& g : acc) emit(g.begin, g.end);
      return;
    }
    case Behavior::kMergedWithNext: {
      std::vector<Segment> acc;  // built in reverse
      bool prev_match = false;
      for (size_t k = segs.size(); k-- > 0;) {
        const Segment& g = segs[k];
        if (g.is_match && !prev_match && !acc.empty()) {
          acc.back().begin = g.begin;
        } else {
          acc.push_back(g);
        }
        prev_match = g.is_match;
      }
      for (size_t k = acc.size(); k-- > 0;) emit(acc[k].begin, acc[k].end);
      return;
    }
  }
}

// Segments of `s` from a Pattern's matches.
void PatternSegments(const Pattern& p, std::string_view s, bool invert,
                     std::vector<Segment>& segs) {
  segs.clear();
  size_t prev = 0;
  p.ForEachMatch(s, [&](size_t b, size_t e) {
    if (prev != b) segs.push_back({prev, b, invert});
    segs.push_back({b, e, !invert});
    prev = e;
  });
  if (prev != s.size()) segs.push_back({prev, s.size(), invert});
}

// Segments of `s` where each character satisfying `pred` is a match of its own.
template <typename Pred>
void CharSegments(std::string_view s, Pred pred, std::vector<Segment>& segs) {
  segs.clear();
  size_t last = 0, i = 0;
  while (i < s.size()) {
    size_t b = i;
    char32_t c = NextCodePoint(s, i);
    if (pred(c)) {
      if (last < b) segs.push_back({last, b, false});
      segs.push_back({b, i, true});
      last = i;
    }
  }
  if (s.size() > last) segs.push_back({last, s.size(), false});
}

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {
    if (use_regex_) regex_ = std::make_unique<Pattern>(Pattern::Regex(kGpt2SplitRegex));
  }

  void Apply(const PieceList& in, PieceList& out) const override {
    std::string prefixed;
    for (size_t k = 0; k < in.size(); ++k) {
      std::string_view s = in.View(k);
      const bool at_start = in.AtStart(k);
      if (add_prefix_space_ && s.front() != ' ') {
        prefixed.clear();
        prefixed.push_back(' ');
        prefixed.append(s);
        s = prefixed;
      }
      if (!use_regex_) {
        Emit(s, at_start, out);
        continue;
      }
      size_t prev = 0;
      regex_->ForEachMatch(s, [&](size_t b, size_t e) {
        if (prev != b) Emit(s.substr(prev, b - prev), at_start && prev == 0, out);
        Emit(s.substr(b, e - b), at_start && b == 0, out);
        prev = e;
      });
      if (prev != s.size()) Emit(s.substr(prev), at_start && prev == 0, out);
    }
  }

 private:
  static void Emit(std::string_view word, bool at_start, PieceList& out) {
    size_t begin = out.BeginPiece();
    AppendByteLevel(out.buf, word);
    out.EndPiece(begin, at_start);
  }

  bool add_prefix_space_;
  bool use_regex_;
  std::unique_ptr<Pattern> regex_;
};

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

  void Apply(const PieceList& in, PieceList& out) const override {
    std::vector<Segment> segs;
    for (size_t k = 0; k < in.size(); ++k) {
      std::string_view s = in.View(k);
      const bool at_start = in.AtStart(k);
      if (behavior_ == Behavior::kIsolated && !invert_) {  // hot path: no segment vector
        size_t prev = 0;
        pattern_.ForEachMatch(s, [&](size_t b, size_t e) {
          if (prev != b) out.Add(s.substr(prev, b - prev), at_start && prev == 0);
          out.Add(s.substr(b, e - b), at_start && b == 0);
          prev = e;
        });
        if (prev != s.size()) out.Add(s.substr(prev), at_start && prev == 0);
        continue;
      }
      PatternSegments(pattern_, s, invert_, segs);
      EmitSegments(s, at_start, segs, behavior_, out);
    }
  }

 private:
  Pattern pattern_;
  Behavior behavior_;
  bool invert_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {
    size_t i = 0;
    replacement_char_ = NextCodePoint(replacement_, i);
  }

  void Apply(const PieceList& in, PieceList& out) const override {
    std::string t;
    std::vector<Segment> segs;
    for (size_t k = 0; k < in.size(); ++k) {
      std::string_view s = in.View(k);
      t.clear();
      for (char c : s) {
        if (c == ' ')
          t.append(replacement_);
        else
          t.push_back(c);
      }
      const bool starts_with_rep = t.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts_with_rep && (scheme_ == PrependScheme::kAlways ||
                               (scheme_ == PrependScheme::kFirst && in.AtStart(k)))) {
        t = replacement_ + t;
      }
      if (!split_) {
        out.Add(t, in.AtStart(k));
        continue;
      }
      const char32_t rep = replacement_char_;
      CharSegments(
          t, [rep](char32_t c) { return c == rep; }, segs);
      EmitSegments(t, in.AtStart(k), segs, Behavior::kMergedWithNext, out);
    }
  }

 private:
  std::string replacement_;
  char32_t replacement_char_;
  PrependScheme scheme_;
  bool split_;
};

// Splits on a character predicate with a behavior (WhitespaceSplit, Punctuation, Digits,
// CharDelimiterSplit).
template <typename Pred>
class CharSplitPreTokenizer final : public PreTokenizer {
 public:
  CharSplitPreTokenizer(Pred pred, Behavior behavior) : pred_(pred), behavior_(behavior) {}
  void Apply(const PieceList& in, PieceList& out) const override {
    std::vector<Segment> segs;
    for (size_t k = 0; k < in.size(); ++k) {
      std::string_view s = in.View(k);
      CharSegments(s, pred_, segs);
      EmitSegments(s, in.AtStart(k), segs, behavior_, out);
    }
  }

 private:
  Pred pred_;
  Behavior behavior_;
};

template <typename Pred>
std::unique_ptr<PreTokenizer> MakeCharSplit(Pred pred, Behavior behavior) {
  return std::make_unique<CharSplitPreTokenizer<Pred>>(pred, behavior);
}

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> items)
      : items_(std::move(items)) {}
  void Run(PieceList& pieces, PieceList& scratch) const override {
    for (const auto& p : items_) p->Run(pieces, scratch);
  }
  void Apply(const PieceList& in, PieceList& out) const override {
    PieceList a = in, b;
    Run(a, b);
    for (size_t k = 0; k < a.size(); ++k) out.Add(a.View(k), a.AtStart(k));
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> items_;
};

}  // namespace

std::unique_ptr<PreTokenizer> MakePreTokenizer(const JsonRef& j) {
  const std::string type = j.Type();
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(j.GetBool("add_prefix_space", true),
                                                   j.GetBool("use_regex", true));
  }
  if (type == "Split") {
    Behavior behavior = ParseBehavior(j.At("behavior"));
    return std::make_unique<SplitPreTokenizer>(MakePattern(j.At("pattern")), behavior,
                                               j.GetBool("invert", false));
  }
  if (type == "Metaspace") {
    std::string replacement = j.GetString("replacement", "\xE2\x96\x81");
    if (replacement.empty() || CountCodePoints(replacement) != 1) {
      j.At("replacement").Fail("expected a single character");
    }
    PrependScheme scheme = PrependScheme::kAlways;
    if (auto ps = j.Find("prepend_scheme")) {
      const std::string v = ps->String();
      if (v == "always")
        scheme = PrependScheme::kAlways;
      else if (v == "first")
        scheme = PrependScheme::kFirst;
      else if (v == "never")
        scheme = PrependScheme::kNever;
      else
        ps->Fail("unsupported prepend_scheme \"" + v + "\"");
    } else if (!j.GetBool("add_prefix_space", true)) {
      scheme = PrependScheme::kNever;
    }
    return std::make_unique<MetaspacePreTokenizer>(replacement, scheme, j.GetBool("split", true));
  }
  if (type == "Whitespace") {
    return std::make_unique<SplitPreTokenizer>(
        Pattern::Regex("\\w+|[^\\w\\s]+", RegexDialect::kRustRegex), Behavior::kRemoved, true);
  }
  if (type == "WhitespaceSplit") return MakeCharSplit(IsWhitespace, Behavior::kRemoved);
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> items;
    items.push_back(MakeCharSplit(IsWhitespace, Behavior::kRemoved));
    items.push_back(MakeCharSplit(IsBertPunctuation, Behavior::kIsolated));
    return std::make_unique<SequencePreTokenizer>(std::move(items));
  }
  if (type == "Punctuation") {
    Behavior behavior = Behavior::kIsolated;
    if (auto b = j.Find("behavior")) behavior = ParseBehavior(*b);
    return MakeCharSplit(IsBertPunctuation, behavior);
  }
  if (type == "Digits") {
    return MakeCharSplit(IsNumeric, j.GetBool("individual_digits", false) ? Behavior::kIsolated
                                                                          : Behavior::kContiguous);
  }
  if (type == "CharDelimiterSplit") {
    JsonRef d = j.At("delimiter");
    std::string s = d.String();
    if (CountCodePoints(s) != 1) d.Fail("expected a single character");
    size_t i = 0;
    const char32_t delim = NextCodePoint(s, i);
    return MakeCharSplit([delim](char32_t c) { return c == delim; }, Behavior::kRemoved);
  }
  if (type == "Sequence") {
    JsonRef list = j.At("pretokenizers");
    std::vector<std::unique_ptr<PreTokenizer>> items;
    for (size_t i = 0; i < list.Size(); ++i) items.push_back(MakePreTokenizer(list.Index(i)));
    return std::make_unique<SequencePreTokenizer>(std::move(items));
  }
  j.At("type").Fail("unsupported pre-tokenizer \"" + type + "\"");
}

}  // namespace ebb::tok
