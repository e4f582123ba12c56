"""The fixed head of every generated C++ source: headers, dtype conversions and math helpers.

The libm functions (sin, erf, tanh, pow, ...) are called through ``cpp_math``'s ``e_``/``em_``
functions, which vectorize and compute the same bits in every loop; float ``exp`` (and so
softmax and sigmoid) is computed inline instead (``e_expf``), from IEEE operations only, so it is
the same in vector and scalar code too. Sources whose kernels check indirect indices get the
error record of ``bounds``, written after a kernel's (parallel) loops.
"""
from . import cpp_math


def prelude(code: str) -> str:
    """The head of a C++ source whose kernels are ``code``."""
    checks = _INDEX_CHECKS if "ember_bad_index" in code else ""
    return _HEAD + cpp_math.source(cpp_math.used_in(code)) + _HELPERS + checks


_HEAD = r"""
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
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
// IEEE half <-> float from integer and float operations only, so that loops vectorize (gcc
// converts _Float16 through a library call per element without AVX512-FP16). Both round to
// nearest even; a NaN keeps its sign and payload's top bits and is quiet, as in torch's conversion.
static inline float half_to_float(uint16_t h) {
  const uint32_t w = (uint32_t)h << 16, sign = w & 0x80000000u, two_w = w + w;
  const float normal = __builtin_bit_cast(float, (two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormal = __builtin_bit_cast(float, (two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t bits = two_w < (1u << 27) ? __builtin_bit_cast(uint32_t, denormal) : __builtin_bit_cast(uint32_t, normal);
  return __builtin_bit_cast(float, sign | bits);
}
static inline uint16_t float_to_half(float f) {
  const uint32_t x = __builtin_bit_cast(uint32_t, f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  // below 2^-14 (a half denormal): adding 0.5 rounds to the denormal step 2^-24
  const uint32_t denormal = __builtin_bit_cast(uint32_t, __builtin_bit_cast(float, a) + 0.5f) - (126u << 23);
  const uint32_t normal = (a + (((uint32_t)(15 - 127) << 23) + 0xfffu) + ((a >> 13) & 1u)) >> 13;
  const uint32_t big = a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x3ffu) : 0x7c00u;  // NaN, or inf
  const uint32_t bits = a >= (143u << 23) ? big : (a < (113u << 23) ? denormal : normal);
  return (uint16_t)(sign | bits);
}
// A conversion: from bool by a select (gcc 12 does not vectorize a bool -> float conversion).
// An integer as a float is never -0.0, but with -fno-trapping-math gcc compiles the round trip
// (float)(int64_t)x as trunc(x), which keeps a zero's sign (-0.3 -> -0.0: atan2 and 1/x of it
// went wrong). It folds ``+ 0.0`` away; a select of +0.0 for a zero it keeps (one compare and
// blend in the vector loop).
template <typename T, typename S> static inline T e_cast(S x) {
  if constexpr (std::is_same_v<S, bool> && !std::is_same_v<T, bool>) {
    return x ? T(1) : T(0);
  } else if constexpr (std::is_integral_v<S> && std::is_floating_point_v<T>) {
    const T r = static_cast<T>(x);
    return r == T(0) ? T(0) : r;
  } else {
    return static_cast<T>(x);
  }
}
// Fused multiply-add where the target has it; elsewhere (an AVX2 target without FMA) a
// multiplication and an addition, inline too: std::fma would be a library call per element.
template <typename T> static inline T e_fma(T a, T b, T c) {
#ifdef __FMA__
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}
template <typename T> static inline T e_max(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a > b ? a : b)); }
template <typename T> static inline T e_min(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a < b ? a : b)); }
template <typename T> static inline T e_relu(T a) { return a < T(0) ? T(0) : a; }
template <typename T> static inline T e_floordiv(T a, T b) {
  if constexpr (std::numeric_limits<T>::is_integer) {
    T q = a / b; return ((a % b != 0) && ((a < 0) != (b < 0))) ? q - 1 : q;
  } else { return std::floor(a / b); }
}
template <typename T> static inline T e_fmod(T a, T b) {
  if constexpr (std::numeric_limits<T>::is_integer) { return a % b; }
  else if constexpr (std::is_same_v<T, float>) { return em_fmodf(a, b); } else { return em_fmodd(a, b); }
}
template <typename T> static inline T e_remainder(T a, T b) {
  const T r = e_fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
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
// torch.where of floating values, by bits: gcc turns ``c ? x : f(y)`` with a libm function f
// into a branch around the call, and vectorizes no loop with a branch around a call: softplus
// (where(x > 20, x, log1p(exp(x)))) ran scalar, an order of magnitude behind eager.
template <typename A, typename B> static inline auto e_where(bool c, A a, B b) {
  using T = std::common_type_t<A, B>;
  if constexpr (std::is_same_v<T, float>) return e_pick<float, uint32_t>(c, a, b);
  else if constexpr (std::is_same_v<T, double>) return e_pick<double, uint64_t>(c, a, b);
  else return c ? T(a) : T(b);
}
// float exp, inline so that gcc vectorizes it with the loop (more throughput than libmvec's
// call on the project's CPU, at most 1.03 ulp from the exact value against libmvec's 3):
// x = n ln2 + r with |r| <= ln2 / 2, exp(r) by Cephes' degree-6 polynomial, times 2^n as two
// factors, so that denormal results (n down to -150) come out right. Below -104 the result is
// 0, computed from x = 0, so that no lane underflows: an underflowing product costs a microcode
// assist per vector, and a causal softmax's masked entries are all -inf. n is rounded by adding
// 1.5 * 2^23, whose sum k holds n in its low bits: 2^n's exponent fields are shifted out of
// k's bits, no conversion to int. A NaN x reaches the result through r and p (2^n is never NaN).
static inline float e_expf(float x) {
  const bool zero = x < -104.0f;
  const float xc = e_pick<float, uint32_t>(zero, 0.0f, x > 88.75f ? 88.75f : x);
  const float k = e_fma(xc, 1.44269504088896341f, 12582912.0f);  // 1.5 * 2^23 + n
  const float n = k - 12582912.0f;
  const float r = e_fma(n, 2.12194440e-4f, e_fma(n, -0.693359375f, xc));
  // the polynomial by Estrin's scheme: 4 dependent steps instead of Horner's 8 (faster on
  // chained sigmoids: the suite's pointwise chain, benchmarks/run.py), as accurate (on every
  // float in [-104, 88.75]: at most 1.028 ulp from the exact value, Horner's 1.023)
  const float r2 = r * r;
  const float a = e_fma(1.9875691500e-4f, r, 1.3981999507e-3f);
  const float b = e_fma(8.3334519073e-3f, r, 4.1665795894e-2f);
  const float c = e_fma(1.6666665459e-1f, r, 5.0000001201e-1f);
  const float p = e_fma(e_fma(e_fma(a, r2, b), r2, c), r2, r) + 1.0f;
  const uint32_t kb = __builtin_bit_cast(uint32_t, k), half = kb >> 1;  // n / 2 rounded down, + a constant
  const float s1 = __builtin_bit_cast(float, (half << 23) + (127u << 23));
  const float s2 = __builtin_bit_cast(float, ((kb - half) << 23) + (127u << 23));
  return e_pick<float, uint32_t>(zero, 0.0f, p * s1 * s2);
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
// float sin and cos, inline so that gcc vectorizes them with the loop and computes the sin and
// cos of one value together (libmvec: two calls, which clobber every vector register). x is
// reduced to r = x - n pi/2, |r| <= pi/4, by multiply-adds with pi/2 in three floats (exact
// products), then sin(r) and cos(r) by Cephes' polynomials; n mod 4 picks one of them and its
// sign. Measured on every float below 2^18: at most 1.56 ulp from the exact value (libmvec's
// AVX-512 sinf and cosf: 1.94). Beyond 2^18 ("far", where more bits of pi are needed) the value
// is libm's; such lanes are rare, so a kernel computes every lane inline first, folds
// e_trig_far of each argument into an OpenMP reduction, and only where one was far runs again
// with Fast = false, which computes far lanes with libmvec and the others inline as before: a
// value's bits never depend on the other values of its kernel. n is rounded by adding
// 1.5 * 2^23 (see e_expf), whose low bits are n mod 4. Without FMA the products are not exact
// and every lane is libm's (em_sinf, em_cosf), as in every loop of that target.
template <bool Cos> static inline float em_trig_near(float x) {
  const float k = std::fma(x, 0.636619772367581343f, 12582912.0f);
  const float n = k - 12582912.0f, m = 12582912.0f - k;  // n and -n, both +0 where n is 0
  // r = x - n (c1 + c2 + c3): each product of a zero n is -0 (c1 > 0 > c2, c3), so -0 stays -0
  float r = std::fma(n, -1.57079637050628662109375f, x);
  r = std::fma(m, -4.371138828673793e-08f, r);
  r = std::fma(m, -1.7151245100058819e-15f, r);
  const float z = r * r;
  const float s = std::copysign(  // sin(r) has r's sign; r + r z p rounds the sum of -0 and +0 to +0
      std::fma(r * z, std::fma(z, std::fma(z, -1.9515295891e-4f, 8.3321608736e-3f), -1.6666654611e-1f), r), r);
  const float c = std::fma(z * z, std::fma(z, std::fma(z, 2.443315711809948e-5f, -1.388731625493765e-3f),
                                           4.166664568298827e-2f), std::fma(z, -0.5f, 1.0f));
  const uint32_t kb = __builtin_bit_cast(uint32_t, k) + (Cos ? 1u : 0u);  // cos(x) = sin(x + pi/2)
  const float v = (kb & 1u) ? c : s;
  return __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, v) ^ ((kb & 2u) << 30));
}
#ifdef __FMA__
static inline bool e_trig_far(float x) { return std::fabs(x) > 262144.0f; }
static inline bool e_trig_far(double) { return false; }
template <bool Fast = false, typename T> static inline T e_sin(T a) {
  if constexpr (std::is_same_v<T, float>) {
    if constexpr (Fast) return em_trig_near<false>(a); else return e_trig_far(a) ? em_sinf(a) : em_trig_near<false>(a);
  } else { return em_sind(static_cast<double>(a)); }
}
template <bool Fast = false, typename T> static inline T e_cos(T a) {
  if constexpr (std::is_same_v<T, float>) {
    if constexpr (Fast) return em_trig_near<true>(a); else return e_trig_far(a) ? em_cosf(a) : em_trig_near<true>(a);
  } else { return em_cosd(static_cast<double>(a)); }
}
#else
template <typename T> static inline bool e_trig_far(T) { return false; }  // never a second pass
template <bool Fast = false, typename T> static inline auto e_sin(T a) {
  if constexpr (std::is_same_v<T, float>) return em_sinf(a); else return em_sind(static_cast<double>(a));
}
template <bool Fast = false, typename T> static inline auto e_cos(T a) {
  if constexpr (std::is_same_v<T, float>) return em_cosf(a); else return em_cosd(static_cast<double>(a));
}
#endif
template <typename T> static inline T e_floor(T a) { if constexpr (std::numeric_limits<T>::is_integer) return a; else return std::floor(a); }
template <typename T> static inline T e_ceil(T a) { if constexpr (std::numeric_limits<T>::is_integer) return a; else return std::ceil(a); }
template <typename T> static inline T e_trunc(T a) { if constexpr (std::numeric_limits<T>::is_integer) return a; else return std::trunc(a); }
template <typename T> static inline T e_round(T a) { if constexpr (std::numeric_limits<T>::is_integer) return a; else return std::nearbyint(a); }
template <typename T> static inline bool e_isinf(T a) { if constexpr (std::numeric_limits<T>::is_integer) return false; else return std::isinf(a); }
template <typename T> static inline T e_abs(T a) { if constexpr (std::numeric_limits<T>::is_integer) return a < T(0) ? T(-a) : a; else return std::fabs(a); }
"""

_INDEX_CHECKS = r"""
// An index out of range, reported by a kernel after its loops: flag, value, bound, code.
static int64_t ember_index_error[4];
static void __attribute__((noinline, cold)) ember_bad_index(int64_t value, int64_t bound, int64_t code) {
  if (ember_index_error[0]) return;  // the first one is kept
  ember_index_error[0] = 1; ember_index_error[1] = value; ember_index_error[2] = bound; ember_index_error[3] = code;
}
static inline int64_t ember_index_failed() { return ember_index_error[0]; }
// Copies the record into out[0..2] (value, bound, code) and clears it.
extern "C" void ember_take_index_error(int64_t* out) {
  out[0] = ember_index_error[1]; out[1] = ember_index_error[2]; out[2] = ember_index_error[3];
  ember_index_error[0] = 0;
}
"""
