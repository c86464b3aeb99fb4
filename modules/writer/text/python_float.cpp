// Python's repr(float): the shortest digits that round-trip (Dragonbox's public API),
// laid out by Python's float_repr rules.
module;

#include <dragonbox/dragonbox.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

module jsonl.writer;

import :python_float;

namespace jsonl::detail {
namespace {

// The eight decimal digits of `value` (below 10^8, leading zeros included) as ASCII, in
// memory order: both four-digit halves, then their two-digit quarters, then single
// digits are split in parallel lanes of one word by multiply-and-shift division.
std::uint64_t eight_digits(std::uint32_t value) noexcept {
  const std::uint64_t halves = value / 10000 | std::uint64_t{value % 10000} << 32;
  const std::uint64_t hundreds = ((halves * 10486) >> 20) & 0x0000007F0000007F;  // lane / 100
  const std::uint64_t quarters = hundreds | (halves - 100 * hundreds) << 16;
  const std::uint64_t tens = ((quarters * 103) >> 10) & 0x000F000F000F000F;     // lane / 10
  return (tens | (quarters - 10 * tens) << 8) + 0x3030303030303030;
}

// The decimal digits of `value` (0 < value < 10^17) at the end of `buffer`; returns the
// first, and their count in `count`.
const char* significand_digits(std::uint64_t value, char (&buffer)[48], int& count) noexcept {
  static constexpr std::uint64_t powers_of_10[] = {
      1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
      10000000000, 100000000000, 1000000000000, 10000000000000, 100000000000000,
      1000000000000000, 10000000000000000, 100000000000000000};
  const int estimate = (std::bit_width(value) * 1233) >> 12;  // floor(log10) or one less
  count = estimate + (value >= powers_of_10[estimate]);
  const std::uint64_t high = value / 100000000;
  const std::uint64_t words[3] = {eight_digits(static_cast<std::uint32_t>(high / 100000000)),
                                  eight_digits(static_cast<std::uint32_t>(high % 100000000)),
                                  eight_digits(static_cast<std::uint32_t>(value % 100000000))};
  std::memcpy(buffer, words, sizeof words);
  return buffer + sizeof words - count;
}

// "d[.ddd]e±XX", at least two exponent digits.
char* scientific(char* at, const char* digits, int count, int exponent) {
  *at++ = digits[0];
  if (count > 1) {
    *at++ = '.';
    std::memcpy(at, digits + 1, 20);
    at += count - 1;
  }
  *at++ = 'e';
  *at++ = exponent < 0 ? '-' : '+';
  const int magnitude = exponent < 0 ? -exponent : exponent;
  if (magnitude < 10) *at++ = '0';
  return std::to_chars(at, at + 3, magnitude).ptr;
}

}  // namespace

char* python_float_repr(char* at, double number) noexcept {
  if (std::signbit(number)) *at++ = '-';
  if (number == 0) {
    std::memcpy(at, "0.0", 3);
    return at + 3;
  }
  // Dragonbox's default policies: trailing zeros removed, and among the shortest digits
  // the ones nearest the value, ties to even, as Python's repr picks them.
  const auto decimal = jkj::dragonbox::to_decimal(std::fabs(number));
  char buffer[48];
  int count = 0;
  const char* const digits = significand_digits(decimal.significand, buffer, count);
  const int point = count + decimal.exponent;  // digits before the decimal point
  if (point > 16 || point < -3) {
    at = scientific(at, digits, count, point - 1);
  } else if (point <= 0) {  // 0.000ddd
    std::memcpy(at, "0.000", 5);
    at += 2 - point;
    std::memcpy(at, digits, 20);
    at += count;
  } else if (point < count) {  // ddd.ddd
    std::memcpy(at, digits, 20);
    at += point;
    *at++ = '.';
    std::memcpy(at, digits + point, 20);
    at += count - point;
  } else {  // ddd000.0
    std::memcpy(at, digits, 20);
    at += count;
    std::memcpy(at, "0000000000000000", 16);
    at += point - count;
    std::memcpy(at, ".0", 2);
    at += 2;
  }
  return at;
}

}  // namespace jsonl::detail
