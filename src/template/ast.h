// src/template/ast.h — the parsed form of a template (expressions and statements).
//
// Built by the parser, then immutable: rendering only reads it, so one parsed template can be
// rendered from many threads at once. Nodes own their children through unique_ptr.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/template_error.h"
#include "template/value.h"

namespace ebb::tmpl {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;
using KwArgs = std::vector<std::pair<std::string, ExprPtr>>;

struct Expr {
  enum class Kind {
    kLiteral,  // literal
    kName,     // name
    kGetAttr,  // args[0].name
    kGetItem,  // args[0][args[1]]
    kSlice,    // args[0][args[1]:args[2]:args[3]] (null parts allowed)
    kCall,     // args[0](args[1..], kwargs)
    kFilter,   // args[0] | name(args[1..], kwargs)
    kTest,     // args[0] is [not] name(args[1..], kwargs)
    kNot,      // not args[0]
    kNeg,      // -args[0]
    kPos,      // +args[0]
    kBinary,   // args[0] <name> args[1]: + - * / // % ** ~
    kAnd,      // args[0] and args[1]
    kOr,       // args[0] or args[1]
    kCompare,  // args[0] ops[0] args[1] ops[1] args[2] ... (==, !=, <, <=, >, >=, in, notin)
    kCond,     // args[1] if args[0] else args[2] (args[2] may be null)
    kList,     // [args...]
    kTuple,    // (args...)
    kDict,     // {args[0]: args[1], ...}
  };
  Kind kind;
  SourcePos pos;
  std::string name;
  Value literal;
  std::vector<ExprPtr> args;
  KwArgs kwargs;
  std::vector<std::string> ops;
  bool negated = false;
  int depth = 1;  // height of this subtree (bounded by the parser)

  Expr(Kind k, SourcePos p) : kind(k), pos(p) {}
};

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches (cond, body)...; else_body
    kFor,       // for targets in expr [if cond]: body else else_body
    kSet,       // set targets = expr (several targets: unpacking)
    kSetAttr,   // set targets[0].targets[1] = expr (namespace attribute)
    kSetBlock,  // set targets[0] %} body {% endset
    kMacro,     // macro name(params) body
    kBreak,
    kContinue,
    kFilterBlock,  // filter expr (a filter chain applied to the body's output) body
    kGeneration,   // {% generation %} body (transformers' assistant mask marker; no output)
  };
  Kind kind;
  SourcePos pos;
  std::string text;
  std::string name;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<std::string> targets;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro params (default may be null)

  Stmt(Kind k, SourcePos p) : kind(k), pos(p) {}
};

// Name bound to the rendered body inside a {% filter %} block's filter chain.
inline constexpr const char* kFilterBodyName = "#filter-body";

}  // namespace ebb::tmpl
