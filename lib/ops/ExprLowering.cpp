#include "ops/ExprLowering.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <aspen/HalfFloat.hpp>

#include <cmath>
#include <optional>

namespace aspen::ops::detail {

using expr::ExprKind;
using Kind = ExprNode::Kind;

unsigned LoweredExpr::numOperations() const {
  unsigned n = 0;
  for (const ExprNode &node : nodes)
    n += node.kind != Kind::Input && node.kind != Kind::Const;
  return n;
}

std::string exprToString(const expr::Expr &e) {
  switch (e.kind()) {
  case ExprKind::Const:
    return e.getAs<expr::Const>()->printValue();
  case ExprKind::PlaceHolder:
    return "_" + std::to_string(e.getAs<expr::PlaceHolder>()->getIndex());
  case ExprKind::Cast: {
    const auto *c = e.getAs<expr::Cast>();
    return fmt::format("Cast({},{})", exprToString(c->getLHS()), c->getRHSType().toString());
  }
  case ExprKind::Unary: {
    const auto *u = e.getAs<expr::UnaryOp>();
    return fmt::format("{}({})", toString(u->getOpType()), exprToString(u->getArg()));
  }
  case ExprKind::Binary: {
    const auto *b = e.getAs<expr::BinaryOp>();
    return fmt::format("{}({},{})", toString(b->getOpType()), exprToString(b->getLHS()),
                       exprToString(b->getRHS()));
  }
  case ExprKind::Ternary: {
    const auto *t = e.getAs<expr::TernaryOp>();
    return fmt::format("{}({},{},{})", toString(t->getOpType()), exprToString(t->getArg0()),
                       exprToString(t->getArg1()), exprToString(t->getArg2()));
  }
  }
  return "?";
}

namespace {

// Converts a constant's value to its node type, as a cast would: floating-point values rounded
// to float (or half); integers truncated and saturated from floating point (NaN gives 0) or
// wrapped from integers; bool as x != 0.
void normalizeConst(ExprNode &c) {
  const Type t = c.type;
  if (t == FLOAT || t == HALF) {
    float f = static_cast<float>(c.isFloat ? c.floatValue : static_cast<double>(c.intValue));
    c.floatValue = t == HALF ? static_cast<float>(half(f)) : f;
    c.isFloat = true;
    return;
  }
  if (t == BOOL) {
    c.intValue = c.isFloat ? c.floatValue != 0 : c.intValue != 0;
    c.isFloat = false;
    return;
  }
  const unsigned bits = static_cast<unsigned>(t.size() * 8);
  const long long lo = t.isSigned() ? -(1ll << (bits - 1)) : 0;
  const long long hi = t.isSigned() ? (1ll << (bits - 1)) - 1
                                    : static_cast<long long>((1ull << bits) - 1);
  if (c.isFloat) {
    const double d = c.floatValue;
    c.intValue = std::isnan(d) ? 0 : d <= static_cast<double>(lo) ? lo
                                   : d >= static_cast<double>(hi) ? hi : static_cast<long long>(d);
  } else {
    const unsigned long long mask = (1ull << bits) - 1;
    const unsigned long long u = static_cast<unsigned long long>(c.intValue) & mask;
    c.intValue = t.isSigned() && (u >> (bits - 1))
                     ? static_cast<long long>(u) - static_cast<long long>(mask) - 1
                     : static_cast<long long>(u);
  }
  c.isFloat = false;
  c.floatValue = static_cast<double>(c.intValue);
}

class Lowering {
public:
  Lowering(const std::vector<Type> &types, const std::vector<std::string> &names,
           const std::string &caller)
      : types_(types), names_(names), caller_(caller) {}

  LoweredExpr run(const expr::Expr &e) {
    lower(e, Type());
    return std::move(result_);
  }

private:
  // The type a subexpression has whatever its context, or nothing when only untyped constants
  // decide it.
  std::optional<Type> fixedType(const expr::Expr &e) {
    switch (e.kind()) {
    case ExprKind::Const: {
      const auto *c = e.getAs<expr::Const>();
      return c->isTyped() ? std::optional<Type>(c->getType()) : std::nullopt;
    }
    case ExprKind::PlaceHolder:
      return types_[placeholderIndex(*e.getAs<expr::PlaceHolder>())];
    case ExprKind::Cast:
      return e.getAs<expr::Cast>()->getRHSType();
    case ExprKind::Unary: {
      const auto *u = e.getAs<expr::UnaryOp>();
      const auto t = fixedType(u->getArg());
      if (resultType(u->getOpType(), INT) == BOOL)
        return BOOL;
      return t;
    }
    case ExprKind::Binary: {
      const auto *b = e.getAs<expr::BinaryOp>();
      if (resultType(b->getOpType(), INT) == BOOL)
        return BOOL;
      const auto t = fixedType(b->getLHS());
      return t ? t : fixedType(b->getRHS());
    }
    case ExprKind::Ternary: {
      const auto *t = e.getAs<expr::TernaryOp>();
      const auto a = fixedType(t->getArg0());
      return a ? a : fixedType(t->getArg1());
    }
    }
    return std::nullopt;
  }

  unsigned placeholderIndex(const expr::PlaceHolder &p) {
    if (p.getIndex() == 0 || p.getIndex() > types_.size())
      throw index_error(fmt::format("{}: placeholder _{} refers to tensor {}, but {} tensor{} "
                                    "given",
                                    caller_, p.getIndex(), p.getIndex(), types_.size(),
                                    types_.size() == 1 ? " was" : "s were"));
    return p.getIndex() - 1;
  }

  std::string describe(const expr::Expr &e) {
    if (const auto *p = e.getAs<expr::PlaceHolder>())
      return fmt::format("_{} (tensor '{}')", p->getIndex(), names_[placeholderIndex(*p)]);
    return exprToString(e);
  }

  // The one type of several operands: the fixed types must agree; untyped constants follow.
  Type commonType(const std::string &opName, std::initializer_list<const expr::Expr *> operands,
                  Type wanted) {
    const expr::Expr *first = nullptr;
    std::optional<Type> common;
    for (const expr::Expr *o : operands) {
      const auto t = fixedType(*o);
      if (!t)
        continue;
      if (common && *t != *common)
        throw type_error(fmt::format("{}: the operands of {} must have one type, but {} is {} "
                                     "and {} is {}",
                                     caller_, opName, describe(*first), common->toString(),
                                     describe(*o), t->toString()));
      if (!common) {
        common = t;
        first = o;
      }
    }
    if (common)
      return *common;
    if (wanted.valid())
      return wanted;
    return result_.nodes[lower(**operands.begin(), Type())].type;
  }

  void checkType(bool supported, const std::string &opName, Type t) {
    if (!supported)
      throw type_error(fmt::format("{}: operation {} is not defined for element type {}", caller_,
                                   opName, t.toString()));
  }

  unsigned add(ExprNode node) {
    result_.nodes.push_back(node);
    return static_cast<unsigned>(result_.nodes.size() - 1);
  }

  // Lowers e; `wanted` is the type an untyped constant takes (invalid: its literal type).
  unsigned lower(const expr::Expr &e, Type wanted) {
    ExprNode node;
    switch (e.kind()) {
    case ExprKind::Const: {
      const auto *c = e.getAs<expr::Const>();
      node.kind = Kind::Const;
      node.type = c->isTyped() || !wanted.valid() ? c->getType() : wanted;
      node.isFloat = c->isFloatingPoint();
      node.floatValue = c->asDouble();
      node.intValue = c->asInteger();
      checkConstType(node);
      normalizeConst(node);
      return add(node);
    }
    case ExprKind::PlaceHolder: {
      const unsigned index = placeholderIndex(*e.getAs<expr::PlaceHolder>());
      for (unsigned i = 0; i < result_.nodes.size(); ++i)
        if (result_.nodes[i].kind == Kind::Input && result_.nodes[i].input == index)
          return i;
      node.kind = Kind::Input;
      node.input = index;
      node.type = types_[index];
      return add(node);
    }
    case ExprKind::Cast: {
      const auto *c = e.getAs<expr::Cast>();
      node.kind = Kind::Cast;
      node.args[0] = lower(c->getLHS(), Type());
      node.operandType = result_.nodes[node.args[0]].type;
      node.type = c->getRHSType();
      checkCastType(node.operandType);
      checkCastType(node.type);
      return add(node);
    }
    case ExprKind::Unary: {
      const auto *u = e.getAs<expr::UnaryOp>();
      const std::string name = toString(u->getOpType());
      const bool givesBool = resultType(u->getOpType(), INT) == BOOL;
      const Type t = commonType(name, {&u->getArg()}, givesBool ? Type() : wanted);
      checkType(supportsType(u->getOpType(), t), name, t);
      node.kind = Kind::Unary;
      node.op = static_cast<unsigned>(u->getOpType());
      node.args[0] = lower(u->getArg(), t);
      node.operandType = t;
      node.type = resultType(u->getOpType(), t);
      return add(node);
    }
    case ExprKind::Binary: {
      const auto *b = e.getAs<expr::BinaryOp>();
      const std::string name = toString(b->getOpType());
      const bool givesBool = resultType(b->getOpType(), INT) == BOOL;
      const Type t = commonType(name, {&b->getLHS(), &b->getRHS()}, givesBool ? Type() : wanted);
      checkType(supportsType(b->getOpType(), t), name, t);
      node.kind = Kind::Binary;
      node.op = static_cast<unsigned>(b->getOpType());
      node.args[0] = lower(b->getLHS(), t);
      node.args[1] = lower(b->getRHS(), t);
      node.operandType = t;
      node.type = resultType(b->getOpType(), t);
      return add(node);
    }
    case ExprKind::Ternary: {
      const auto *x = e.getAs<expr::TernaryOp>();
      const std::string name = toString(x->getOpType());
      const bool select = x->getOpType() == TernaryOpType::SELECT;
      const Type t = select ? commonType(name, {&x->getArg0(), &x->getArg1()}, wanted)
                            : commonType(name, {&x->getArg0(), &x->getArg1(), &x->getArg2()},
                                         wanted);
      checkType(supportsType(x->getOpType(), t), name, t);
      node.kind = Kind::Ternary;
      node.op = static_cast<unsigned>(x->getOpType());
      node.args[0] = lower(x->getArg0(), t);
      node.args[1] = lower(x->getArg1(), t);
      node.args[2] = lower(x->getArg2(), select ? BOOL : t);
      if (select && result_.nodes[node.args[2]].type != BOOL)
        throw type_error(fmt::format("{}: the predicate of SELECT must be bool, but {} is {}",
                                     caller_, describe(x->getArg2()),
                                     result_.nodes[node.args[2]].type.toString()));
      node.operandType = t;
      node.type = t;
      return add(node);
    }
    }
    throw internal_error("unknown expression kind");
  }

  // Casts convert between all twelve element types; constants have the nine types of the
  // operations (a constant of another type is cast from one of those).
  void checkCastType(Type t) {
    bool known = false;
#define ASPEN_EW_KNOWN(unused, cpp, C) known = known || t == C;
    ASPEN_EW_TYPES_CAST(ASPEN_EW_KNOWN, _)
    if (!known)
      throw type_error(fmt::format("{}: Cast to or from element type {} is not supported{}",
                                   caller_, t.toString(),
                                   t == QUARTER || t == QUARTER_METADATA
                                       ? " in an expression (quarter data needs its metadata: "
                                         "use aspen::ops::cast with a metadata tensor)"
                                       : ""));
  }
  void checkConstType(const ExprNode &node) {
    const Type t = node.type;
    bool known = false;
    ASPEN_EW_TYPES_ALL(ASPEN_EW_KNOWN, _)
#undef ASPEN_EW_KNOWN
    if (!known)
      throw type_error(fmt::format("{}: a constant of element type {} is not supported by "
                                   "element-wise operations (float, half, int, unsigned int, "
                                   "short, unsigned short, char, unsigned char, bool); cast a "
                                   "constant of one of these instead",
                                   caller_, t.toString()));
  }

  const std::vector<Type> &types_;
  const std::vector<std::string> &names_;
  const std::string &caller_;
  LoweredExpr result_;
};

} // namespace

LoweredExpr lowerExpr(const expr::Expr &e, const std::vector<Type> &operandTypes,
                      const std::vector<std::string> &operandNames, const std::string &caller) {
  return Lowering(operandTypes, operandNames, caller).run(e);
}

} // namespace aspen::ops::detail
