// A Groth16 partition on the device: the proving key resident in GPU memory, H computed and
// consumed on the device, the five MSMs, the G2 one on its own stream and host thread.
#pragma once
#include <future>
#include <memory>
#include <vector>

#include "msm.cuh"

// A proving key's point vectors in device memory (affine, Montgomery), until cz_srs_free.
struct cz_srs {
    int device = 0;
    size_t n_h = 0, n_l = 0, n_a = 0, n_b_g1 = 0, n_b_g2 = 0;
    g1_affine_t *h = nullptr, *l = nullptr, *a = nullptr, *b_g1 = nullptr;
    g2_affine_t* b_g2 = nullptr;
    size_t nbytes = 0;
    // The device allocations behind the vectors, freed with the key (benchmark keys may let
    // vectors share one allocation).
    std::vector<void*> owned;
    ~cz_srs();
};

// One partition's witness side on the device (canonical Fr limbs).
struct partition_device {
    int log_n = 0;
    fr_t *a = nullptr, *b = nullptr, *c = nullptr;  // N entries each (zero padded); clobbered
    fr_t* inputs = nullptr;
    size_t n_inputs = 0;
    fr_t* aux = nullptr;
    size_t n_aux = 0;
    const uint8_t *a_aux_density = nullptr, *b_input_density = nullptr, *b_aux_density = nullptr;
};

// A partition's device buffers and the view of them prove_device reads (uploaded from the host,
// upload.cuh, or made on the device, instance.cuh).
struct partition_buffers {
    std::vector<dev_buf<fr_t>> fr_bufs;
    std::vector<dev_buf<uint8_t>> flag_bufs;
    partition_device part;
};

struct proof_sums {
    g1_xyzz_t h, l, a, b_g1;
    g2_xyzz_t b_g2;
};

// Milliseconds per stage of the last proof (for benchmarks and logs). total_ms is the device
// work of prove_device; upload_ms, queue_ms and r1cs_ms are set by the host-array path
// (upload.cu): the upload until the data was on the device, the wait behind partitions ahead
// of it, and the R1CS evaluation of a witness partition.
struct prove_timings {
    static constexpr int kCount = 8;
    double h_ms = 0, g1_msm_ms = 0, g2_wait_ms = 0, total_ms = 0;
    double upload_ms = 0, queue_ms = 0;
    double r1cs_ms = 0;  // a, b, c from a resident circuit (a witness partition), before total_ms
    double msm_in_turn = 0;  // 1: too little device memory to run the MSMs side by side
    // out[0..kCount): the C ABI's order (h, g1 msm, g2 wait, total, upload, queue, r1cs, msm_in_turn).
    void write(double* out) const {
        const double v[kCount] = {h_ms, g1_msm_ms, g2_wait_ms, total_ms, upload_ms, queue_ms, r1cs_ms, msm_in_turn};
        for (int i = 0; i < kCount; i++) out[i] = v[i];
    }
};

// Loads raw Filecoin encodings (G1: x||y big-endian 96 B; G2: x.c1||x.c0||y.c1||y.c0 192 B).
std::unique_ptr<cz_srs> srs_load(cz_context& ctx, const uint8_t* h, size_t n_h, const uint8_t* l, size_t n_l,
                                 const uint8_t* a, size_t n_a, const uint8_t* b_g1, size_t n_b_g1,
                                 const uint8_t* b_g2, size_t n_b_g2);

// out[0 .. k) = in[i] for the i < n with flags[i]; returns k (synchronises the stream): the
// dense scalars of a partition, and of a key's columns.
size_t select_flagged(cudaStream_t stream, const fr_t* in, const uint8_t* flags, size_t n, fr_t* out);

// Runs the whole partition; blocks until the five sums are on the host. With `cancel`, checked
// before each stage and in the MSMs' window loops: CZ_CANCELLED once it is set, after the
// work already queued on the context's streams has finished (the context stays usable).
proof_sums prove_device(cz_context& ctx, const cz_srs& srs, partition_device& part, prove_timings* timings,
                        const cz_cancel_flag* cancel = nullptr);
