// Number-theoretic transforms over Fr on the device (data in Montgomery form).
#pragma once
#include <functional>

#include "context.cuh"

// Decimation in frequency: natural-order input -> bit-reversed output, in place.
// Root w = omega_N (or omega_N^-1 when inverse); no 1/N scaling.
void ntt_dif(cz_context& ctx, fr_t* d, int log_n, bool inverse);
// Decimation in time: bit-reversed input -> natural-order output, in place.
void ntt_dit(cz_context& ctx, fr_t* d, int log_n, bool inverse);
// out[bitrev(i)] = in[i] (out != in).
void bit_reverse(cz_context& ctx, const fr_t* in, fr_t* out, int log_n);
// d[i] *= factor * base^e(i), e(i) = i, or bitrev(i) when bitrev_exponent (the coset shifts).
void scale_by_powers(cz_context& ctx, fr_t* d, int log_n, fr_t base, fr_t factor, bool bitrev_exponent);
void to_montgomery(cz_context& ctx, fr_t* d, size_t n);
void from_montgomery(cz_context& ctx, fr_t* d, size_t n);

// Host-side Fr constants (Montgomery form).
fr_t fr_from_u64(uint64_t x);
fr_t fr_root_of_unity(int log_n);  // primitive 2^log_n-th root: 7^((r-1)/2^32) squared 32-log_n times
fr_t fr_coset_shift();             // 7, Filecoin's coset generator

// Natural order in and out, canonical limbs in and out: the protocol's ntt().
void ntt_natural(cz_context& ctx, fr_t* d, int log_n, bool inverse, bool coset);
// Filecoin's H: coefficients (N of them, the last one 0 for a satisfied circuit) of
// (A B - C) / Z on the coset, from evaluations a, b, c (canonical, N each, zero padded).
// a, b, c are overwritten; h receives the result (canonical, natural order; h may be b, which
// the last step no longer reads: a proof needs no fourth vector). No Montgomery
// conversion passes: transforms and scalings by Montgomery constants are linear, so canonical
// values stay canonical; only the pointwise product needs a correction (quotient_kernel).
void quotient_h_device(cz_context& ctx, fr_t* a, fr_t* b, fr_t* c, fr_t* h, int log_n);
// The same H in two buffers of N instead of three, for a device short of memory: a and b
// (canonical evaluations, as above) are transformed and multiplied first, then `fill_c(b)`
// writes C's evaluations (canonical, N, zero padded) into b's room on ctx.stream, and H ends
// in b (canonical, natural order); a is clobbered. Its transforms make their twiddles from two
// small tables (no N-entry tables: the twiddle cache is left as it is).
void quotient_h_lean(cz_context& ctx, fr_t* a, fr_t* b, const std::function<void(fr_t*)>& fill_c, int log_n);

// Whether both twiddle tables of a 2^log_n transform are cached on the context, and the cache
// emptied (in the main stream's order) where a small device needs their N entries of room.
bool twiddles_cached(const cz_context& ctx, int log_n);
void twiddles_release(cz_context& ctx);
