// Bounds in COIN-OR's convention, shared by the Clp and Cbc adapters (the only files that
// include COIN headers; not part of the lp library's interface).
#pragma once

#include <CoinFinite.hpp>

#include "gavel/lp/model.h"

namespace gavel::lp {

// Our kInfinity bounds as COIN_DBL_MAX, which COIN reads as "unbounded"; finite ones as they are.
inline double ToCoin(double v) {
  if (v == kInfinity) return COIN_DBL_MAX;
  if (v == -kInfinity) return -COIN_DBL_MAX;
  return v;
}

}  // namespace gavel::lp
