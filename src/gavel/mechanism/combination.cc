#include "gavel/mechanism/combination.h"

namespace gavel::mechanism {

std::string Combination::ToString() const {
  if (!is_pair()) return first_.ToString();
  std::string text = "(";
  text += first_.ToString();
  text += ", ";
  text += second_->ToString();
  text += ")";
  return text;
}

}  // namespace gavel::mechanism
