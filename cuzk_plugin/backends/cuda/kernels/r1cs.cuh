// A pre-compiled circuit (cuzk_plugin/formats/pce.py) resident on the device, and the R1CS
// evaluation a = A z, b = B z, c = C z over its rows, which feeds H without leaving the device.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "context.cuh"

// One matrix in compressed sparse rows on the device: row j's terms are
// row_ptr[j] .. row_ptr[j + 1]; each term a column of z and an index into the coefficient table.
struct csr_device {
    const uint64_t* row_ptr = nullptr;  // m + 1
    const uint32_t* cols = nullptr;     // nnz
    const uint32_t* coeff = nullptr;    // nnz
    size_t nnz = 0;
};

// What a coefficient is, so the row loop can skip the product where it need not multiply.
enum coeff_kind : uint8_t { COEFF_OTHER = 0, COEFF_ONE = 1, COEFF_MINUS_ONE = 2 };

// The circuit's matrices, coefficient table and densities in device memory, until cz_circuit_free.
struct cz_circuit {
    int device = 0;
    size_t m = 0, num_inputs = 0, num_aux = 0, n_coeffs = 0;
    csr_device mat[3];                   // A, B, C
    const fr_t* coeff_mont = nullptr;    // the table in Montgomery form: M(c R, z) = c z
    const fr_t* coeff_canon = nullptr;   // canonical: the term when z = 1
    const uint8_t* coeff_kinds = nullptr;
    const uint8_t *a_aux_density = nullptr, *b_input_density = nullptr, *b_aux_density = nullptr;
    size_t nbytes = 0;
    std::vector<void*> owned;
    ~cz_circuit();
};

// One matrix's host arrays as the C ABI takes them.
struct csr_host {
    const uint64_t* row_ptr;
    const uint32_t* cols;
    const uint32_t* coeff;
    size_t nnz;
};

// Copies a circuit to the device (coeffs: n_coeffs canonical Fr, 4 uint64 each; the caller has
// checked the CSR arrays: row_ptr non-decreasing from 0 to nnz, cols < num_inputs + num_aux,
// coefficient indices < n_coeffs).
std::unique_ptr<cz_circuit> circuit_load(cz_context& ctx, size_t m, size_t num_inputs, size_t num_aux,
                                         const uint64_t* coeffs, size_t n_coeffs, const csr_host mats[3],
                                         const uint8_t* a_aux_density, const uint8_t* b_input_density,
                                         const uint8_t* b_aux_density);

// a, b, c (canonical, circuit.m rows each, rows m .. n - 1 set to zero) from z (canonical,
// inputs then aux) on `stream`.
void r1cs_evaluate(cudaStream_t stream, const cz_circuit& circuit, const fr_t* z, fr_t* a, fr_t* b, fr_t* c, size_t n);

// Rows j < m with a_j * b_j != c_j (canonical a, b, c on the device): how many, and the first
// (UINT64_MAX when every row holds). Blocks until the count is on the host.
struct r1cs_violations {
    uint64_t count = 0;
    uint64_t first = UINT64_MAX;
};
r1cs_violations r1cs_check(cudaStream_t stream, const fr_t* a, const fr_t* b, const fr_t* c, size_t m);
