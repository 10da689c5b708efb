// Element-wise expressions (popops::expr): trees of placeholders, constants, casts and
// operations, evaluated in one pass by aspen::ops::map (ElementWise.hpp).
//
//   _1 ... _20                 the tensors passed to map, in order
//   Const(v) / Const(v, type)  a scalar constant; without a type it adopts the type of the
//                              operand it meets (Const(2) * _1 on a float tensor is a float 2),
//                              and has the type of its C++ literal only where it meets none
//   ConstHalf(v)               a half constant
//   Cast(e, type)              e converted to `type` (ElementwiseMath.hpp gives the rules)
//   UnaryOp/BinaryOp/TernaryOp an operation of ExprOp.hpp on sub-expressions
//   Abs(e), Add(a, b), Max(a, b), Select(a, b, pred), Clamp(x, lo, hi), ... one node class per
//                              row of the operation table
//   Any                        a type-erased copy of any expression
// C++ operators + - * / % == != < <= > >= && || & | ^ << >> ! ~ and unary - build trees from
// expressions and arithmetic literals (which become untyped Consts).
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Type.hpp>
#include <aspen/ops/ExprOp.hpp>

#include <memory>
#include <string>
#include <type_traits>

namespace aspen::ops::expr {

// The operation enums (ElementwiseOpTable.hpp) under expr too, where PopLibs declares them
// (popops::expr::UnaryOpType::ABSOLUTE, ...).
using aspen::ops::BinaryOpType;
using aspen::ops::TernaryOpType;
using aspen::ops::UnaryOpType;

enum class ExprKind { Const, PlaceHolder, Cast, Unary, Binary, Ternary };

class ASPEN_API Expr {
public:
  virtual ~Expr() = default;
  virtual std::unique_ptr<Expr> clone() const = 0;
  virtual ExprKind kind() const = 0;
  template <class T> bool isA() const { return dynamic_cast<const T *>(this) != nullptr; }
  template <class T> const T *getAs() const { return dynamic_cast<const T *>(this); }
};

// A type-erased, copyable expression.
class Any {
public:
  Any(const Expr &e) : expr_(e.clone()) {}
  Any(const Any &o) : expr_(o.expr_->clone()) {}
  Any &operator=(const Any &o) {
    expr_ = o.expr_->clone();
    return *this;
  }
  operator const Expr &() const { return *expr_; }
  const Expr &get() const { return *expr_; }

private:
  std::unique_ptr<Expr> expr_;
};

class ASPEN_API Const : public Expr {
public:
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  Const(T value) : Const(value, literalType<T>(), false) {}
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  Const(T value, Type type) : Const(value, type, true) {}
  std::unique_ptr<Expr> clone() const override { return std::make_unique<Const>(*this); }
  ExprKind kind() const override { return ExprKind::Const; }

  // The type of the literal (or the one given); isTyped() is false for a literal's type,
  // which yields to the type of the operand the constant meets.
  Type getType() const { return type_; }
  bool isTyped() const { return typed_; }
  // The value exactly as given: integers as integers, floating point as double.
  bool isFloatingPoint() const { return isFloat_; }
  double asDouble() const { return isFloat_ ? floatValue_ : static_cast<double>(intValue_); }
  long long asInteger() const { return isFloat_ ? static_cast<long long>(floatValue_) : intValue_; }
  std::string printValue() const;

private:
  template <class T> static Type literalType() {
    if constexpr (std::is_same_v<T, bool>)
      return BOOL;
    else if constexpr (std::is_floating_point_v<T>)
      return FLOAT; // double literals are floats on the device, as in popops
    else if constexpr (std::is_signed_v<T>)
      return sizeof(T) <= 1 ? CHAR : sizeof(T) == 2 ? SHORT : INT;
    else
      return sizeof(T) <= 1 ? UNSIGNED_CHAR : sizeof(T) == 2 ? UNSIGNED_SHORT : UNSIGNED_INT;
  }
  template <class T> Const(T value, Type type, bool typed) : type_(type), typed_(typed) {
    if constexpr (std::is_floating_point_v<T>) {
      isFloat_ = true;
      floatValue_ = static_cast<double>(value);
    } else {
      intValue_ = static_cast<long long>(value);
    }
  }
  Type type_;
  bool typed_ = false;
  bool isFloat_ = false;
  double floatValue_ = 0;
  long long intValue_ = 0;
};

class ASPEN_API ConstHalf : public Const {
public:
  explicit ConstHalf(float value) : Const(value, HALF) {}
};

class ASPEN_API PlaceHolder : public Expr {
public:
  explicit constexpr PlaceHolder(unsigned index) : index_(index) {}
  std::unique_ptr<Expr> clone() const override { return std::make_unique<PlaceHolder>(*this); }
  ExprKind kind() const override { return ExprKind::PlaceHolder; }
  unsigned getIndex() const { return index_; } // 1-based, as _1

private:
  unsigned index_;
};

inline const PlaceHolder _1{1}, _2{2}, _3{3}, _4{4}, _5{5}, _6{6}, _7{7}, _8{8}, _9{9}, _10{10},
    _11{11}, _12{12}, _13{13}, _14{14}, _15{15}, _16{16}, _17{17}, _18{18}, _19{19}, _20{20};

class ASPEN_API Cast : public Expr {
public:
  Cast(const Expr &a, Type type) : a_(a), type_(type) {}
  std::unique_ptr<Expr> clone() const override { return std::make_unique<Cast>(*this); }
  ExprKind kind() const override { return ExprKind::Cast; }
  const Expr &getLHS() const { return a_; }
  Type getRHSType() const { return type_; }

private:
  Any a_;
  Type type_;
};

class ASPEN_API UnaryOp : public Expr {
public:
  UnaryOp(UnaryOpType op, const Expr &a) : op_(op), a_(a) {}
  std::unique_ptr<Expr> clone() const override { return std::make_unique<UnaryOp>(*this); }
  ExprKind kind() const override { return ExprKind::Unary; }
  UnaryOpType getOpType() const { return op_; }
  const Expr &getArg() const { return a_; }

private:
  UnaryOpType op_;
  Any a_;
};

class ASPEN_API BinaryOp : public Expr {
public:
  BinaryOp(BinaryOpType op, const Expr &a, const Expr &b) : op_(op), a_(a), b_(b) {}
  std::unique_ptr<Expr> clone() const override { return std::make_unique<BinaryOp>(*this); }
  ExprKind kind() const override { return ExprKind::Binary; }
  BinaryOpType getOpType() const { return op_; }
  const Expr &getLHS() const { return a_; }
  const Expr &getRHS() const { return b_; }

private:
  BinaryOpType op_;
  Any a_, b_;
};

class ASPEN_API TernaryOp : public Expr {
public:
  TernaryOp(TernaryOpType op, const Expr &a, const Expr &b, const Expr &c)
      : op_(op), a_(a), b_(b), c_(c) {}
  std::unique_ptr<Expr> clone() const override { return std::make_unique<TernaryOp>(*this); }
  ExprKind kind() const override { return ExprKind::Ternary; }
  TernaryOpType getOpType() const { return op_; }
  const Expr &getArg0() const { return a_; }
  const Expr &getArg1() const { return b_; }
  const Expr &getArg2() const { return c_; }

private:
  TernaryOpType op_;
  Any a_, b_, c_;
};

// One node class per row: Abs(e), Add(a, b), Clamp(x, lo, hi), ...
#define ASPEN_EXPR_UNARY_NODE(e, Node, fn, types, result)                                       \
  class Node : public UnaryOp {                                                                 \
  public:                                                                                       \
    explicit Node(const Expr &a) : UnaryOp(UnaryOpType::e, a) {}                                \
  };
#define ASPEN_EXPR_BINARY_NODE(e, Node, fn, types, result)                                      \
  class Node : public BinaryOp {                                                                \
  public:                                                                                       \
    Node(const Expr &a, const Expr &b) : BinaryOp(BinaryOpType::e, a, b) {}                     \
  };
#define ASPEN_EXPR_TERNARY_NODE(e, Node, fn, types, result)                                     \
  class Node : public TernaryOp {                                                               \
  public:                                                                                       \
    Node(const Expr &a, const Expr &b, const Expr &c) : TernaryOp(TernaryOpType::e, a, b, c) {} \
  };
ASPEN_EW_UNARY_OPS(ASPEN_EXPR_UNARY_NODE)
ASPEN_EW_BINARY_OPS(ASPEN_EXPR_BINARY_NODE)
ASPEN_EW_TERNARY_OPS(ASPEN_EXPR_TERNARY_NODE)
#undef ASPEN_EXPR_UNARY_NODE
#undef ASPEN_EXPR_BINARY_NODE
#undef ASPEN_EXPR_TERNARY_NODE

// --- operators ------------------------------------------------------------------------------
template <class T>
using IfLiteral = std::enable_if_t<std::is_arithmetic_v<T>, Any>;

#define ASPEN_EXPR_BINARY_OPERATOR(sym, e)                                                      \
  inline Any operator sym(const Expr &a, const Expr &b) { return BinaryOp(BinaryOpType::e, a, b); } \
  template <class T> IfLiteral<T> operator sym(const Expr &a, T b) {                            \
    return BinaryOp(BinaryOpType::e, a, Const(b));                                              \
  }                                                                                             \
  template <class T> IfLiteral<T> operator sym(T a, const Expr &b) {                            \
    return BinaryOp(BinaryOpType::e, Const(a), b);                                              \
  }
ASPEN_EXPR_BINARY_OPERATOR(+, ADD)
ASPEN_EXPR_BINARY_OPERATOR(-, SUBTRACT)
ASPEN_EXPR_BINARY_OPERATOR(*, MULTIPLY)
ASPEN_EXPR_BINARY_OPERATOR(/, DIVIDE)
ASPEN_EXPR_BINARY_OPERATOR(%, REMAINDER)
ASPEN_EXPR_BINARY_OPERATOR(==, EQUAL)
ASPEN_EXPR_BINARY_OPERATOR(!=, NOT_EQUAL)
ASPEN_EXPR_BINARY_OPERATOR(<, LESS_THAN)
ASPEN_EXPR_BINARY_OPERATOR(<=, LESS_THAN_EQUAL)
ASPEN_EXPR_BINARY_OPERATOR(>, GREATER_THAN)
ASPEN_EXPR_BINARY_OPERATOR(>=, GREATER_THAN_EQUAL)
ASPEN_EXPR_BINARY_OPERATOR(&&, LOGICAL_AND)
ASPEN_EXPR_BINARY_OPERATOR(||, LOGICAL_OR)
ASPEN_EXPR_BINARY_OPERATOR(&, BITWISE_AND)
ASPEN_EXPR_BINARY_OPERATOR(|, BITWISE_OR)
ASPEN_EXPR_BINARY_OPERATOR(^, BITWISE_XOR)
ASPEN_EXPR_BINARY_OPERATOR(<<, SHIFT_LEFT)
ASPEN_EXPR_BINARY_OPERATOR(>>, SHIFT_RIGHT_SIGN_EXTEND)
#undef ASPEN_EXPR_BINARY_OPERATOR

inline Any operator!(const Expr &a) { return UnaryOp(UnaryOpType::LOGICAL_NOT, a); }
inline Any operator~(const Expr &a) { return UnaryOp(UnaryOpType::BITWISE_NOT, a); }
inline Any operator-(const Expr &a) { return UnaryOp(UnaryOpType::NEGATE, a); }

} // namespace aspen::ops::expr
