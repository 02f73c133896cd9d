#include "template/parser.h"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "template/builtins.h"

namespace ebb::tmpl {
namespace {

bool IsOneOf(std::string_view s, std::initializer_list<std::string_view> options) {
  for (std::string_view o : options) {
    if (s == o) return true;
  }
  return false;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::string_view name)
      : tokens_(std::move(tokens)), name_(name) {}

  Body ParseTemplate() {
    std::string end_tag;
    Body body = ParseBody({}, &end_tag, SourcePos{});
    return body;
  }

 private:
  // ---- token helpers -------------------------------------------------------------------------
  const Token& Peek(size_t ahead = 0) const {
    size_t i = std::min(index_ + ahead, tokens_.size() - 1);
    return tokens_[i];
  }
  const Token& Next() {
    const Token& t = tokens_[index_];
    if (index_ + 1 < tokens_.size()) ++index_;
    return t;
  }
  bool IsOp(std::string_view op, size_t ahead = 0) const {
    const Token& t = Peek(ahead);
    return t.kind == TokenKind::kOperator && t.text == op;
  }
  bool IsName(std::string_view name, size_t ahead = 0) const {
    const Token& t = Peek(ahead);
    return t.kind == TokenKind::kName && t.text == name;
  }
  [[noreturn]] void Fail(SourcePos pos, std::string_view message) const {
    ThrowAt(name_, pos, message);
  }
  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kText:
        return "text";
      case TokenKind::kVarBegin:
        return "'{{'";
      case TokenKind::kVarEnd:
        return "'}}'";
      case TokenKind::kBlockBegin:
        return "'{%'";
      case TokenKind::kBlockEnd:
        return "'%}'";
      case TokenKind::kName:
        return "'" + t.text + "'";
      case TokenKind::kString:
        return "string literal";
      case TokenKind::kInt:
      case TokenKind::kFloat:
        return "number '" + t.text + "'";
      case TokenKind::kOperator:
        return "'" + t.text + "'";
      case TokenKind::kEnd:
        return "end of template";
    }
    return "token";
  }
  void ExpectOp(std::string_view op) {
    if (!IsOp(op)) Fail(Peek().pos, "expected '" + std::string(op) + "', got " + Describe(Peek()));
    Next();
  }
  std::string ExpectName() {
    if (Peek().kind != TokenKind::kName)
      Fail(Peek().pos, "expected a name, got " + Describe(Peek()));
    return Next().text;
  }
  void ExpectBlockEnd() {
    if (Peek().kind != TokenKind::kBlockEnd) {
      Fail(Peek().pos, "expected '%}', got " + Describe(Peek()));
    }
    Next();
  }

  struct DepthGuard {
    DepthGuard(Parser* p, SourcePos pos) : parser(p) {
      if (++parser->depth_ > kMaxNesting) parser->Fail(pos, "template nested too deeply");
    }
    ~DepthGuard() { --parser->depth_; }
    Parser* parser;
  };

  // ---- statements ----------------------------------------------------------------------------
  // Parses until a block tag named in `end_tags`; stores its name in *found (the tag name token
  // is consumed, the rest of the tag is not). With no end tags, parses to the end.
  Body ParseBody(std::initializer_list<std::string_view> end_tags, std::string* found,
                 SourcePos opened_at, std::string_view opener = {}) {
    DepthGuard guard(this, Peek().pos);
    Body body;
    while (true) {
      const Token& t = Peek();
      switch (t.kind) {
        case TokenKind::kText: {
          auto s = std::make_unique<Stmt>(Stmt::Kind::kText, t.pos);
          s->text = t.text;
          Next();
          body.push_back(std::move(s));
          break;
        }
        case TokenKind::kVarBegin: {
          SourcePos pos = Next().pos;
          auto s = std::make_unique<Stmt>(Stmt::Kind::kOutput, pos);
          s->expr = ParseTuple(true);
          if (Peek().kind != TokenKind::kVarEnd) {
            Fail(Peek().pos, "expected '}}', got " + Describe(Peek()));
          }
          Next();
          body.push_back(std::move(s));
          break;
        }
        case TokenKind::kBlockBegin: {
          Next();
          const Token& tag = Peek();
          if (tag.kind != TokenKind::kName)
            Fail(tag.pos, "expected a tag name, got " + Describe(tag));
          for (std::string_view end : end_tags) {
            if (tag.text == end) {
              *found = tag.text;
              Next();
              return body;
            }
          }
          body.push_back(ParseStatement());
          break;
        }
        case TokenKind::kEnd:
          if (end_tags.size() != 0) {
            std::string expected;
            for (std::string_view e : end_tags) {
              if (!expected.empty()) expected += " or ";
              expected += "'" + std::string(e) + "'";
            }
            Fail(opened_at, "'" + std::string(opener) + "' is never closed (expected " + expected +
                                " before the end of the template)");
          }
          return body;
        default:
          Fail(t.pos, "unexpected " + Describe(t));
      }
    }
  }

  StmtPtr ParseStatement() {
    const Token& tag = Peek();
    const SourcePos pos = tag.pos;
    const std::string name = tag.text;
    if (name == "if") return ParseIf();
    if (name == "for") return ParseFor();
    if (name == "set") return ParseSet();
    if (name == "macro") return ParseMacro();
    if (name == "filter") return ParseFilterBlock();
    if (name == "generation") {
      Next();
      ExpectBlockEnd();
      auto s = std::make_unique<Stmt>(Stmt::Kind::kGeneration, pos);
      std::string found;
      s->body = ParseBody({"endgeneration"}, &found, pos, "generation");
      ExpectBlockEnd();
      return s;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) Fail(pos, "'" + name + "' outside of a for loop");
      Next();
      ExpectBlockEnd();
      return std::make_unique<Stmt>(name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue,
                                    pos);
    }
    if (IsOneOf(name, {"endif", "endfor", "endset", "endmacro", "endfilter", "endgeneration",
                       "else", "elif", "endraw"})) {
      Fail(pos, "unexpected '" + name + "' (no matching opening tag)");
    }
    Fail(pos, "unsupported tag '" + name + "'");
  }

  StmtPtr ParseIf() {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kIf, Peek().pos);
    SourcePos opened = Next().pos;
    while (true) {
      ExprPtr cond = ParseTuple(true);
      ExpectBlockEnd();
      std::string found;
      Body body = ParseBody({"elif", "else", "endif"}, &found, opened, "if");
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (found == "elif") continue;
      if (found == "else") {
        ExpectBlockEnd();
        s->else_body = ParseBody({"endif"}, &found, opened, "if");
      }
      ExpectBlockEnd();
      return s;
    }
  }

  StmtPtr ParseFor() {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kFor, Peek().pos);
    SourcePos opened = Next().pos;
    bool parenthesized = false;
    if (IsOp("(")) {
      Next();
      parenthesized = true;
    }
    s->targets.push_back(ExpectName());
    while (IsOp(",")) {
      Next();
      if (Peek().kind != TokenKind::kName) break;
      s->targets.push_back(ExpectName());
    }
    if (parenthesized) ExpectOp(")");
    if (!IsName("in")) Fail(Peek().pos, "expected 'in' in for loop, got " + Describe(Peek()));
    Next();
    s->expr = ParseTuple(false);
    if (IsName("if")) {
      Next();
      s->cond = ParseExpression(true);
    }
    if (IsName("recursive")) Fail(Peek().pos, "unsupported: recursive for loops");
    ExpectBlockEnd();
    std::string found;
    ++loop_depth_;
    s->body = ParseBody({"else", "endfor"}, &found, opened, "for");
    --loop_depth_;
    if (found == "else") {
      ExpectBlockEnd();
      s->else_body = ParseBody({"endfor"}, &found, opened, "for");
    }
    ExpectBlockEnd();
    return s;
  }

  StmtPtr ParseSet() {
    SourcePos opened = Next().pos;
    std::string first = ExpectName();
    if (IsOp(".")) {
      Next();
      auto s = std::make_unique<Stmt>(Stmt::Kind::kSetAttr, opened);
      s->targets = {first, ExpectName()};
      ExpectOp("=");
      s->expr = ParseTuple(true);
      ExpectBlockEnd();
      return s;
    }
    std::vector<std::string> targets = {first};
    while (IsOp(",")) {
      Next();
      if (Peek().kind != TokenKind::kName) break;
      targets.push_back(ExpectName());
    }
    if (IsOp("=")) {
      Next();
      auto s = std::make_unique<Stmt>(Stmt::Kind::kSet, opened);
      s->targets = std::move(targets);
      s->expr = ParseTuple(true);
      ExpectBlockEnd();
      return s;
    }
    if (targets.size() == 1 && Peek().kind == TokenKind::kBlockEnd) {
      Next();
      auto s = std::make_unique<Stmt>(Stmt::Kind::kSetBlock, opened);
      s->targets = std::move(targets);
      std::string found;
      int saved = loop_depth_;
      s->body = ParseBody({"endset"}, &found, opened, "set");
      loop_depth_ = saved;
      ExpectBlockEnd();
      return s;
    }
    if (IsOp("|")) Fail(Peek().pos, "unsupported: filtered block set ({% set x | filter %})");
    Fail(Peek().pos, "expected '=' or '%}' in set, got " + Describe(Peek()));
  }

  StmtPtr ParseMacro() {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kMacro, Peek().pos);
    SourcePos opened = Next().pos;
    s->name = ExpectName();
    ExpectOp("(");
    bool defaults_started = false;
    while (!IsOp(")")) {
      if (!s->params.empty()) ExpectOp(",");
      if (IsOp(")")) break;
      if (IsOp("*") || IsOp("**")) Fail(Peek().pos, "unsupported: *args/**kwargs in macro");
      std::string param = ExpectName();
      ExprPtr def;
      if (IsOp("=")) {
        Next();
        def = ParseExpression(true);
        defaults_started = true;
      } else if (defaults_started) {
        Fail(Peek().pos, "non-default macro parameter follows a default one");
      }
      s->params.emplace_back(std::move(param), std::move(def));
    }
    Next();
    ExpectBlockEnd();
    std::string found;
    int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = ParseBody({"endmacro"}, &found, opened, "macro");
    loop_depth_ = saved;
    if (Peek().kind == TokenKind::kName && Peek().text == s->name) Next();
    ExpectBlockEnd();
    return s;
  }

  StmtPtr ParseFilterBlock() {
    auto s = std::make_unique<Stmt>(Stmt::Kind::kFilterBlock, Peek().pos);
    SourcePos opened = Next().pos;
    ExprPtr node = std::make_unique<Expr>(Expr::Kind::kName, opened);
    node->name = kFilterBodyName;
    node = ParseFilter(std::move(node), /*first_without_pipe=*/true);
    while (IsOp("|")) node = ParseFilter(std::move(node), false);
    s->expr = std::move(node);
    ExpectBlockEnd();
    std::string found;
    s->body = ParseBody({"endfilter"}, &found, opened, "filter");
    ExpectBlockEnd();
    return s;
  }

  // ---- expressions ---------------------------------------------------------------------------
  // Computes a node's height from its (already sealed) children; rejects over-deep trees before
  // they grow, so neither evaluation nor destruction can recurse without bound.
  ExprPtr Seal(ExprPtr e) {
    int depth = 0;
    for (const auto& a : e->args) {
      if (a) depth = std::max(depth, a->depth);
    }
    for (const auto& kw : e->kwargs) depth = std::max(depth, kw.second->depth);
    e->depth = depth + 1;
    if (e->depth > kMaxExprDepth) Fail(e->pos, "expression nested too deeply");
    return e;
  }

  // A tuple without parentheses ("a, b") or a single expression.
  ExprPtr ParseTuple(bool with_condexpr) {
    SourcePos pos = Peek().pos;
    ExprPtr first = ParseExpression(with_condexpr);
    if (!IsOp(",")) return first;
    auto tuple = std::make_unique<Expr>(Expr::Kind::kTuple, pos);
    tuple->args.push_back(std::move(first));
    while (IsOp(",")) {
      Next();
      if (AtExpressionEnd()) break;
      tuple->args.push_back(ParseExpression(with_condexpr));
    }
    return Seal(std::move(tuple));
  }

  bool AtExpressionEnd() const {
    const Token& t = Peek();
    return t.kind == TokenKind::kVarEnd || t.kind == TokenKind::kBlockEnd ||
           t.kind == TokenKind::kEnd ||
           (t.kind == TokenKind::kOperator && (t.text == ")" || t.text == "]" || t.text == "}")) ||
           (t.kind == TokenKind::kName && t.text == "if");
  }

  ExprPtr ParseExpression(bool with_condexpr) {
    DepthGuard guard(this, Peek().pos);
    if (!with_condexpr) return ParseOr();
    ExprPtr expr = ParseOr();
    while (IsName("if")) {
      SourcePos pos = Next().pos;
      auto cond = std::make_unique<Expr>(Expr::Kind::kCond, pos);
      ExprPtr test = ParseOr();
      ExprPtr otherwise;
      if (IsName("else")) {
        Next();
        otherwise = ParseExpression(true);
      }
      cond->args.push_back(std::move(test));
      cond->args.push_back(std::move(expr));
      cond->args.push_back(std::move(otherwise));
      expr = Seal(std::move(cond));
    }
    return expr;
  }

  ExprPtr Binary(Expr::Kind kind, SourcePos pos, ExprPtr left, ExprPtr right, std::string op = {}) {
    auto e = std::make_unique<Expr>(kind, pos);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return Seal(std::move(e));
  }

  ExprPtr ParseOr() {
    ExprPtr left = ParseAnd();
    while (IsName("or")) {
      SourcePos pos = Next().pos;
      left = Binary(Expr::Kind::kOr, pos, std::move(left), ParseAnd());
    }
    return left;
  }

  ExprPtr ParseAnd() {
    ExprPtr left = ParseNot();
    while (IsName("and")) {
      SourcePos pos = Next().pos;
      left = Binary(Expr::Kind::kAnd, pos, std::move(left), ParseNot());
    }
    return left;
  }

  ExprPtr ParseNot() {
    if (IsName("not")) {
      DepthGuard guard(this, Peek().pos);
      auto e = std::make_unique<Expr>(Expr::Kind::kNot, Next().pos);
      e->args.push_back(ParseNot());
      return Seal(std::move(e));
    }
    return ParseCompare();
  }

  ExprPtr ParseCompare() {
    SourcePos pos = Peek().pos;
    ExprPtr first = ParseMath1();
    std::unique_ptr<Expr> cmp;
    while (true) {
      std::string op;
      const Token& t = Peek();
      if (t.kind == TokenKind::kOperator && IsOneOf(t.text, {"==", "!=", "<", "<=", ">", ">="})) {
        op = t.text;
        Next();
      } else if (IsName("in")) {
        op = "in";
        Next();
      } else if (IsName("not") && IsName("in", 1)) {
        op = "notin";
        Next();
        Next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = std::make_unique<Expr>(Expr::Kind::kCompare, pos);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(ParseMath1());
    }
    return cmp ? Seal(std::move(cmp)) : std::move(first);
  }

  ExprPtr ParseMath1() {
    ExprPtr left = ParseConcat();
    while (IsOp("+") || IsOp("-")) {
      const Token& t = Next();
      left = Binary(Expr::Kind::kBinary, t.pos, std::move(left), ParseConcat(), t.text);
    }
    return left;
  }

  ExprPtr ParseConcat() {
    ExprPtr left = ParseMath2();
    while (IsOp("~")) {
      const Token& t = Next();
      left = Binary(Expr::Kind::kBinary, t.pos, std::move(left), ParseMath2(), "~");
    }
    return left;
  }

  ExprPtr ParseMath2() {
    ExprPtr left = ParsePow();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const Token& t = Next();
      left = Binary(Expr::Kind::kBinary, t.pos, std::move(left), ParsePow(), t.text);
    }
    return left;
  }

  ExprPtr ParsePow() {
    ExprPtr left = ParseUnary(true);
    while (IsOp("**")) {
      const Token& t = Next();
      left = Binary(Expr::Kind::kBinary, t.pos, std::move(left), ParseUnary(true), "**");
    }
    return left;
  }

  ExprPtr ParseUnary(bool with_filter) {
    DepthGuard guard(this, Peek().pos);
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      const Token& t = Next();
      node = std::make_unique<Expr>(t.text == "-" ? Expr::Kind::kNeg : Expr::Kind::kPos, t.pos);
      node->args.push_back(ParseUnary(false));
      node = Seal(std::move(node));
    } else {
      node = ParsePrimary();
    }
    node = ParsePostfix(std::move(node));
    if (with_filter) node = ParseFilterExpr(std::move(node));
    return node;
  }

  ExprPtr ParsePrimary() {
    const Token& t = Peek();
    switch (t.kind) {
      case TokenKind::kName: {
        Next();
        auto lit = std::make_unique<Expr>(Expr::Kind::kLiteral, t.pos);
        if (t.text == "true" || t.text == "True") {
          lit->literal = Value::Bool(true);
        } else if (t.text == "false" || t.text == "False") {
          lit->literal = Value::Bool(false);
        } else if (t.text == "none" || t.text == "None") {
          lit->literal = Value::None();
        } else {
          auto name = std::make_unique<Expr>(Expr::Kind::kName, t.pos);
          name->name = t.text;
          return name;
        }
        return lit;
      }
      case TokenKind::kString: {
        auto lit = std::make_unique<Expr>(Expr::Kind::kLiteral, t.pos);
        std::string s = Next().text;
        while (Peek().kind == TokenKind::kString) s += Next().text;  // implicit concatenation
        lit->literal = Value::String(std::move(s));
        return lit;
      }
      case TokenKind::kInt: {
        auto lit = std::make_unique<Expr>(Expr::Kind::kLiteral, t.pos);
        lit->literal = Value::Int(Next().int_value);
        return lit;
      }
      case TokenKind::kFloat: {
        auto lit = std::make_unique<Expr>(Expr::Kind::kLiteral, t.pos);
        lit->literal = Value::Float(Next().float_value);
        return lit;
      }
      case TokenKind::kOperator:
        if (t.text == "(") return ParseParenthesized();
        if (t.text == "[") return ParseList();
        if (t.text == "{") return ParseDict();
        break;
      default:
        break;
    }
    Fail(t.pos, "unexpected " + Describe(t) + " in expression");
  }

  ExprPtr ParseParenthesized() {
    SourcePos pos = Next().pos;
    if (IsOp(")")) {
      Next();
      return std::make_unique<Expr>(Expr::Kind::kTuple, pos);
    }
    ExprPtr first = ParseExpression(true);
    if (IsOp(")")) {
      Next();
      return first;
    }
    auto tuple = std::make_unique<Expr>(Expr::Kind::kTuple, pos);
    tuple->args.push_back(std::move(first));
    while (IsOp(",")) {
      Next();
      if (IsOp(")")) break;
      tuple->args.push_back(ParseExpression(true));
    }
    ExpectOp(")");
    return Seal(std::move(tuple));
  }

  ExprPtr ParseList() {
    auto list = std::make_unique<Expr>(Expr::Kind::kList, Next().pos);
    while (!IsOp("]")) {
      if (!list->args.empty()) {
        ExpectOp(",");
        if (IsOp("]")) break;
      }
      list->args.push_back(ParseExpression(true));
    }
    Next();
    return Seal(std::move(list));
  }

  ExprPtr ParseDict() {
    auto dict = std::make_unique<Expr>(Expr::Kind::kDict, Next().pos);
    while (!IsOp("}")) {
      if (!dict->args.empty()) {
        ExpectOp(",");
        if (IsOp("}")) break;
      }
      dict->args.push_back(ParseExpression(true));
      ExpectOp(":");
      dict->args.push_back(ParseExpression(true));
    }
    Next();
    return Seal(std::move(dict));
  }

  ExprPtr ParsePostfix(ExprPtr node) {
    while (true) {
      if (IsOp(".")) {
        SourcePos pos = Next().pos;
        const Token& t = Peek();
        if (t.kind == TokenKind::kName) {
          auto e = std::make_unique<Expr>(Expr::Kind::kGetAttr, pos);
          e->name = Next().text;
          e->args.push_back(std::move(node));
          node = Seal(std::move(e));
        } else if (t.kind == TokenKind::kInt) {
          auto e = std::make_unique<Expr>(Expr::Kind::kGetItem, pos);
          auto index = std::make_unique<Expr>(Expr::Kind::kLiteral, t.pos);
          index->literal = Value::Int(Next().int_value);
          e->args.push_back(std::move(node));
          e->args.push_back(std::move(index));
          node = Seal(std::move(e));
        } else {
          Fail(t.pos, "expected an attribute name after '.', got " + Describe(t));
        }
      } else if (IsOp("[")) {
        node = ParseSubscript(std::move(node));
      } else if (IsOp("(")) {
        node = ParseCall(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr ParseSubscript(ExprPtr node) {
    DepthGuard guard(this, Peek().pos);
    SourcePos pos = Next().pos;
    ExprPtr parts[3];
    bool is_slice = false;
    int part = 0;
    while (true) {
      if (IsOp(":")) {
        Next();
        is_slice = true;
        if (++part > 2) Fail(Peek().pos, "too many ':' in slice");
        continue;
      }
      if (IsOp("]")) break;
      if (parts[part]) Fail(Peek().pos, "expected ']' or ':', got " + Describe(Peek()));
      parts[part] = is_slice ? ParseExpression(true) : ParseTuple(true);
    }
    Next();
    if (!is_slice) {
      if (!parts[0]) Fail(pos, "empty subscript");
      auto e = std::make_unique<Expr>(Expr::Kind::kGetItem, pos);
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(parts[0]));
      return Seal(std::move(e));
    }
    auto e = std::make_unique<Expr>(Expr::Kind::kSlice, pos);
    e->args.push_back(std::move(node));
    for (auto& p : parts) e->args.push_back(std::move(p));
    return Seal(std::move(e));
  }

  // Parses "(args)" into e->args (after any existing ones) and e->kwargs.
  void ParseCallArgs(Expr* e) {
    ExpectOp("(");
    bool first = true;
    while (!IsOp(")")) {
      if (!first) {
        ExpectOp(",");
        if (IsOp(")")) break;
      }
      first = false;
      if (IsOp("*") || IsOp("**")) Fail(Peek().pos, "unsupported: *args/**kwargs in a call");
      if (Peek().kind == TokenKind::kName && IsOp("=", 1)) {
        std::string key = Next().text;
        Next();
        e->kwargs.emplace_back(std::move(key), ParseExpression(true));
      } else {
        if (!e->kwargs.empty()) Fail(Peek().pos, "positional argument follows keyword argument");
        e->args.push_back(ParseExpression(true));
      }
    }
    Next();
  }

  ExprPtr ParseCall(ExprPtr callee) {
    DepthGuard guard(this, Peek().pos);
    auto e = std::make_unique<Expr>(Expr::Kind::kCall, Peek().pos);
    e->args.push_back(std::move(callee));
    ParseCallArgs(e.get());
    return Seal(std::move(e));
  }

  ExprPtr ParseFilterExpr(ExprPtr node) {
    while (true) {
      if (IsOp("|")) {
        node = ParseFilter(std::move(node), false);
      } else if (IsName("is")) {
        node = ParseTest(std::move(node));
      } else if (IsOp("(")) {
        node = ParseCall(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr ParseFilter(ExprPtr node, bool first_without_pipe) {
    DepthGuard guard(this, Peek().pos);
    if (!first_without_pipe) Next();  // '|'
    const Token& t = Peek();
    if (t.kind != TokenKind::kName) Fail(t.pos, "expected a filter name, got " + Describe(t));
    if (!IsKnownFilter(t.text)) Fail(t.pos, "unsupported filter '" + t.text + "'");
    auto e = std::make_unique<Expr>(Expr::Kind::kFilter, t.pos);
    e->name = Next().text;
    e->args.push_back(std::move(node));
    if (IsOp("(")) ParseCallArgs(e.get());
    return Seal(std::move(e));
  }

  ExprPtr ParseTest(ExprPtr node) {
    DepthGuard guard(this, Peek().pos);
    Next();  // 'is'
    bool negated = false;
    if (IsName("not")) {
      Next();
      negated = true;
    }
    const Token& t = Peek();
    if (t.kind != TokenKind::kName) Fail(t.pos, "expected a test name, got " + Describe(t));
    if (!IsKnownTest(t.text)) Fail(t.pos, "unsupported test '" + t.text + "'");
    auto e = std::make_unique<Expr>(Expr::Kind::kTest, t.pos);
    e->name = Next().text;
    e->negated = negated;
    e->args.push_back(std::move(node));
    const Token& a = Peek();
    if (IsOp("(")) {
      ParseCallArgs(e.get());
    } else if ((a.kind == TokenKind::kName || a.kind == TokenKind::kString ||
                a.kind == TokenKind::kInt || a.kind == TokenKind::kFloat || IsOp("[") ||
                IsOp("{")) &&
               !(a.kind == TokenKind::kName &&
                 IsOneOf(a.text, {"else", "or", "and", "if", "is", "in", "not"}))) {
      e->args.push_back(ParsePostfix(ParsePrimary()));
    }
    return Seal(std::move(e));
  }

  std::vector<Token> tokens_;
  std::string_view name_;
  size_t index_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body Parse(std::vector<Token> tokens, std::string_view source_name) {
  return Parser(std::move(tokens), source_name).ParseTemplate();
}

}  // namespace ebb::tmpl
