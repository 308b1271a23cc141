// A satisfiable Groth16 instance of 2^log_n constraints made entirely on the device, its key
// from secrets the caller knows, so that a benchmark proof at full size (2^27) can be checked
// by the CPU verifier afterwards (cuzk_plugin/groth16/bench_circuit.py builds the verifying key).
//
// The circuit, with m public inputs (x_0 = ONE) and N - m aux values y_j:
//   constraint i < m:      x_i * 0 = 0              (bellperson's input constraints: A = x_i)
//   constraint m + j:      y_j * y_j = (y_j^2) ONE   (A = B = y_j; C = ONE with coefficient y_j^2)
// so, with L_i the Lagrange basis of the domain: u(x_i) = L_i(tau), v(x_i) = 0; u(y_j) = v(y_j)
// = L_(m+j)(tau), w(y_j) = 0; and w(ONE) = sum_i c_i L_i(tau), which depends on the witness
// (the C coefficients do) and is returned with it. Aux values are bits with probability
// frac_bits, uniform otherwise: Filecoin's statistics, every aux value dense in A and B.
#pragma once
#include <memory>
#include <vector>

#include "prove.cuh"

struct bench_secrets {
    fr_t tau, alpha, beta, gamma, delta;  // Montgomery form
};

class bench_instance {
  public:
    // Makes the key: H = tau^i Z(tau) / delta G, L = (alpha + beta) L_(m+j)(tau) / delta G,
    // A = L_i(tau) G (B in G1 is A from entry m on: the same points), B in G2 = L_(m+j)(tau) G2.
    bench_instance(cz_context& ctx, int log_n, size_t n_inputs, const bench_secrets& secrets);
    const cz_srs& key() const { return *srs_; }
    // Frees the device key (after a host copy of it was taken); key() is then invalid.
    void release_key() { srs_.reset(); }
    // A fresh witness (x_0 = 1, the rest from `seed`) into `w`; returns w(ONE) at tau (Montgomery).
    fr_t make_witness(double frac_bits, uint64_t seed, partition_buffers& w);

  private:
    cz_context& ctx_;
    int log_n_;
    size_t n_inputs_;
    dev_buf<fr_t> lagrange_;  // L_i(tau), i < N (Montgomery)
    std::unique_ptr<cz_srs> srs_;
};
