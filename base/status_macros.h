// Early-return helpers for absl::Status on serving paths.
#pragma once

#include "absl/status/status.h"

#define LONGQA_RETURN_IF_ERROR(expr)          \
  do {                                        \
    const ::absl::Status _longqa_st = (expr); \
    if (!_longqa_st.ok()) return _longqa_st;  \
  } while (0)

#define LONGQA_CONCAT_INNER(a, b) a##b
#define LONGQA_CONCAT(a, b) LONGQA_CONCAT_INNER(a, b)
#define LONGQA_ASSIGN_OR_RETURN(lhs, expr)                \
  auto LONGQA_CONCAT(_longqa_or_, __LINE__) = (expr);     \
  if (!LONGQA_CONCAT(_longqa_or_, __LINE__).ok())         \
    return LONGQA_CONCAT(_longqa_or_, __LINE__).status(); \
  lhs = std::move(*LONGQA_CONCAT(_longqa_or_, __LINE__))
