"""The fixed head of every generated C++ source: headers, dtype conversions and math helpers.

The libm functions (sin, erf, tanh, pow, ...) are called through ``cpp_math``'s ``e_``/``em_``
functions, which vectorize and compute the same bits in every loop; float ``exp`` (and so
softmax and sigmoid) is computed inline instead (``e_expf``), from IEEE operations only, so it is
the same in vector and scalar code too.
"""
from . import cpp_math


def prelude(code: str) -> str:
    """The head of a C++ source whose kernels are ``code``."""
    return _HEAD + cpp_math.source(cpp_math.used_in(code)) + _HELPERS


_HEAD = r"""
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

typedef _Float16 half;
"""

_HELPERS = r"""

static inline float bf16_to_float(uint16_t v) {
  uint32_t u = ((uint32_t)v) << 16; float f; std::memcpy(&f, &u, 4); return f;
}
static inline uint16_t float_to_bf16(float f) {
  uint32_t u; std::memcpy(&u, &f, 4);
  if (f != f) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
template <typename T> static inline T e_max(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a > b ? a : b)); }
template <typename T> static inline T e_min(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a < b ? a : b)); }
template <typename T> static inline T e_relu(T a) { return a < T(0) ? T(0) : a; }
template <typename T> static inline T e_floordiv(T a, T b) {
  if constexpr (std::numeric_limits<T>::is_integer) {
    T q = a / b; return ((a % b != 0) && ((a < 0) != (b < 0))) ? q - 1 : q;
  } else { return std::floor(a / b); }
}
template <typename T> static inline T e_remainder(T a, T b) {
  if constexpr (std::numeric_limits<T>::is_integer) {
    T r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  } else { T r = std::fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
}
template <typename T> static inline T e_fmod(T a, T b) {
  if constexpr (std::numeric_limits<T>::is_integer) { return a % b; } else { return std::fmod(a, b); }
}
template <typename T> static inline T e_pow(T a, T b) {
  if constexpr (std::numeric_limits<T>::is_integer) {
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
    T r = 1; while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r;
  } else if constexpr (std::is_same_v<T, float>) { return em_powf(a, b); } else { return em_powd(a, b); }
}
template <typename T> static inline T e_sign(T a) { return (a != a) ? a : (T)((T(0) < a) - (a < T(0))); }
// Values chosen by bits: gcc turns f(c ? x : constant) into c ? f(x) : f(constant), which
// evaluates f on x again (see e_expd).
template <typename T, typename U> static inline T e_pick(bool c, T a, T b) {
  const U m = -(U)c;
  return __builtin_bit_cast(T, (U)((__builtin_bit_cast(U, a) & m) | (__builtin_bit_cast(U, b) & ~m)));
}
// float exp, inline so that gcc vectorizes it with the loop (1.5x the throughput of libmvec's
// call on the project's CPU, at most 1 ulp from the rounded exact value against libmvec's 3):
// x = n ln2 + r with |r| <= ln2 / 2, exp(r) by Cephes' degree-6 polynomial, times 2^n as two
// factors, so that denormal results (n down to -150) come out right. Below -104 the result is
// 0, computed from x = 0, so that no lane underflows: an underflowing product costs a microcode
// assist per vector, and a causal softmax's masked entries are all -inf.
static inline float e_expf(float x) {
  const bool zero = x < -104.0f;
  const float xc = e_pick<float, uint32_t>(zero, 0.0f, x > 88.75f ? 88.75f : x);
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  const float r = std::fma(n, 2.12194440e-4f, std::fma(n, -0.693359375f, xc));
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p * r, r, r) + 1.0f;
  const int32_t ni = (int32_t)n, n1 = ni >> 1, n2 = ni - n1;
  const float s1 = __builtin_bit_cast(float, (n1 + 127) << 23), s2 = __builtin_bit_cast(float, (n2 + 127) << 23);
  return e_pick<float, uint32_t>(zero, 0.0f, x != x ? x : p * s1 * s2);
}
// double exp through libmvec, whose vector exp leaves its fast path (for the whole vector) when
// a lane is below about -708: such an x is computed as exp(x + 512) * exp(-512), and one whose
// exp is 0 anyway as exp(-200) * 0.
static inline double e_expd(double x) {
  const bool tiny = x < -700.0, zero = x < -746.0;
  const double arg = e_pick<double, uint64_t>(tiny, e_pick<double, uint64_t>(zero, -200.0, x + 512.0), x);
  return em_expd(arg) * (tiny ? (zero ? 0.0 : 4.377491037053051e-223) : 1.0);  // exp(-512)
}
template <typename T> static inline T e_exp(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return e_expf(x);
  } else if constexpr (std::is_same_v<T, double>) {
    return e_expd(x);
  } else {
    return std::exp(x);
  }
}
template <typename T> static inline T e_sigmoid(T a) { return T(1) / (T(1) + e_exp(-a)); }
template <typename T> static inline T e_floor(T a) { if constexpr (std::numeric_limits<T>::is_integer) return a; else return std::floor(a); }
template <typename T> static inline T e_ceil(T a) { if constexpr (std::numeric_limits<T>::is_integer) return a; else return std::ceil(a); }
template <typename T> static inline T e_trunc(T a) { if constexpr (std::numeric_limits<T>::is_integer) return a; else return std::trunc(a); }
template <typename T> static inline T e_round(T a) { if constexpr (std::numeric_limits<T>::is_integer) return a; else return std::nearbyint(a); }
template <typename T> static inline bool e_isinf(T a) { if constexpr (std::numeric_limits<T>::is_integer) return false; else return std::isinf(a); }
template <typename T> static inline T e_abs(T a) { if constexpr (std::numeric_limits<T>::is_integer) return a < T(0) ? T(-a) : a; else return std::fabs(a); }
"""
