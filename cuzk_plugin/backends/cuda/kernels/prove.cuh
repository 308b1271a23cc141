// A Groth16 partition on the device: the proving key resident in GPU memory, H computed and
// consumed on the device, the five MSMs, the G2 one on its own stream and host thread.
#pragma once
#include <functional>
#include <future>
#include <memory>
#include <vector>

#include "msm.cuh"

// Room left beside a stage's own buffers for what the stage allocates besides (sort scratch,
// power tables, the pool's rounding).
constexpr size_t kRoomMargin = size_t(256) << 20;

// The key's vectors in the library's order (cz_srs_counts, cz_srs_read, residency masks).
enum srs_vector { kSrsH = 0, kSrsL = 1, kSrsA = 2, kSrsBG1 = 3, kSrsBG2 = 4, kSrsVectors = 5 };

// A proving key's point vectors in page-locked host memory (affine, Montgomery: the device's
// own layout, so a streamed chunk is a plain copy), shared by every device's cz_srs attached
// to it, until cz_host_srs_free. Allocated portable: any device copies from it.
struct cz_host_srs {
    size_t n[kSrsVectors] = {};
    void* vec[kSrsVectors] = {};
    size_t nbytes = 0;
    ~cz_host_srs();
};

// A proving key as one device proves with it, until cz_srs_free: each vector resident in
// device memory (affine, Montgomery), or streamed from a cz_host_srs in chunks of
// `stream_chunk` points during each MSM (host_* set, the device pointer null).
struct cz_srs {
    int device = 0;
    size_t n_h = 0, n_l = 0, n_a = 0, n_b_g1 = 0, n_b_g2 = 0;
    g1_affine_t *h = nullptr, *l = nullptr, *a = nullptr, *b_g1 = nullptr;
    g2_affine_t* b_g2 = nullptr;
    const g1_affine_t *host_h = nullptr, *host_l = nullptr, *host_a = nullptr, *host_b_g1 = nullptr;
    const g2_affine_t* host_b_g2 = nullptr;
    size_t stream_chunk = 0;
    size_t nbytes = 0;  // device bytes of the resident vectors
    // The host copy its streamed vectors live in, where the key owns it (a key generated into
    // host memory, srs_generate's to_host); else the host copy is another's (srs_attach).
    std::unique_ptr<cz_host_srs> own_host;
    // The device allocations behind the vectors, freed with the key (benchmark keys may let
    // vectors share one allocation).
    std::vector<void*> owned;
    ~cz_srs();
    // Bit i set: vector i is resident on the device.
    uint32_t resident_mask() const;
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
    // Frees one of a, b, c (0, 1, 2) in the main stream's order (set where the partition owns
    // them: they are the largest buffers of a proof). H is made in b's buffer: a and c go once H
    // is computed, b once the H MSM has read it.
    std::function<void(int)> release_abc;
    // Set where c is not made yet (a witness partition on a device short of memory: c == null):
    // writes C's evaluations into the buffer it is given, in the main stream's order, once H
    // has formed A B in a (quotient_h_lean).
    std::function<void(fr_t*)> evaluate_c;
    // Set where the next partition uploads into this one's room (one partition in flight,
    // upload.cu): called once nothing reads the assignment and densities any more (L's MSM
    // done, A's and B's scalars selected): after the G1 MSMs where B in G2 still runs or is
    // still to run with a room that does not depend on what is free (streamed, or started
    // beside the others), so that the next copy overlaps B in G2 instead of leaving the device
    // idle; or, the upload handed on earlier (hand_on_upload), as soon as they are selected. It
    // frees them and lets the next partition's upload take their room where it has none yet.
    std::function<void()> assignment_done;
    // Set with assignment_done: lets the next partition upload at once into room of its own
    // beside this one's H MSM (compute-bound, while L's copies leave the link room), where its
    // `upload_bytes` (this one's assignment and densities: partitions of a key are alike) fit
    // beside the H and L MSMs; they are held back from what this partition's later choices see
    // as free (cz_context::upload_reserved) until that upload has allocated them.
    std::function<void(size_t)> hand_on_upload;
    size_t upload_bytes = 0;
    // Device bytes kept free for the next partition's upload, which may land while this one
    // computes (two partitions in flight, upload.cu); 0 where none can.
    size_t next_upload_bytes = 0;
    void release(int which) {
        fr_t** v[3] = {&a, &b, &c};
        if (release_abc && *v[which]) release_abc(which);
        if (release_abc) *v[which] = nullptr;
    }
};

// A partition's device buffers and the view of them prove_device reads (uploaded from the host,
// upload.cuh, or made on the device, instance.cuh).
struct partition_buffers {
    std::vector<dev_buf<fr_t>> fr_bufs;
    std::vector<dev_buf<uint8_t>> flag_bufs;
    std::vector<dev_buf<fr_t>> abc;  // a, b, c where freed after H (upload.cu); else in fr_bufs
    partition_device part;
};

struct proof_sums {
    g1_xyzz_t h, l, a, b_g1;
    g2_xyzz_t b_g2;
};

// Milliseconds per stage of the last proof (for benchmarks and logs). total_ms is the device
// work of prove_device; upload_wait_ms, upload_ms, queue_ms and r1cs_ms are set by the
// host-array path (upload.cu): the wait for the upload lock (the partition ahead of it still
// reads its assignment, one partition in flight, or uploads), the upload until the data was on
// the device, the wait for the device behind the partition computing, and the R1CS evaluation
// of a witness partition.
struct prove_timings {
    static constexpr int kCount = 15;
    double h_ms = 0, g1_msm_ms = 0, g2_wait_ms = 0, total_ms = 0;
    double upload_ms = 0, queue_ms = 0;
    double r1cs_ms = 0;  // a, b, c from a resident circuit (a witness partition), before total_ms
    double msm_in_turn = 0;  // 1: too little device memory to run the MSMs side by side
    double msm_paired = 0;   // in turn, pairs of MSMs that still shared the device (0, 1 or 2)
    double h_lean = 0;       // 1: H made in two buffers (quotient_h_lean), C evaluated within h_ms
    // One partition in flight, when the next one could upload: 1 into this one's room after its
    // G1 MSMs (beside B in G2), 2 into room of its own beside its H MSM.
    double upload_handed_on = 0;
    // The device work's two ends that no stage above names (a witness partition's): taking
    // a, b, c from the pool before the R1CS evaluation, and freeing this partition's buffers
    // after B in G2 (with one partition in flight, until the next may take their room).
    double abc_alloc_ms = 0, release_ms = 0;
    double upload_wait_ms = 0;
    // The part of g1_msm_ms until the H MSM (and L's, where it ran beside) ended; the rest is
    // A's and B's MSMs (and L's, where it did not).
    double h_msm_ms = 0;
    // out[0..kCount): the C ABI's order (h, g1 msm, g2 wait, total, upload, queue, r1cs,
    // msm_in_turn, msm_paired, h_lean, upload_handed_on, abc_alloc, release, upload_wait, h_msm).
    void write(double* out) const {
        const double v[kCount] = {h_ms,     g1_msm_ms,   g2_wait_ms, total_ms, upload_ms,        queue_ms,
                                  r1cs_ms,  msm_in_turn, msm_paired, h_lean,   upload_handed_on, abc_alloc_ms,
                                  release_ms, upload_wait_ms, h_msm_ms};
        for (int i = 0; i < kCount; i++) out[i] = v[i];
    }
};

// Loads raw Filecoin encodings (G1: x||y big-endian 96 B; G2: x.c1||x.c0||y.c1||y.c0 192 B).
std::unique_ptr<cz_srs> srs_load(cz_context& ctx, const uint8_t* h, size_t n_h, const uint8_t* l, size_t n_l,
                                 const uint8_t* a, size_t n_a, const uint8_t* b_g1, size_t n_b_g1,
                                 const uint8_t* b_g2, size_t n_b_g2);

// Converts, checks (on the curve) and copies raw Filecoin encodings into a new host key through
// the device of `ctx`, a chunk at a time (the device holds one chunk, never the key).
std::unique_ptr<cz_host_srs> host_srs_from_raw(cz_context& ctx, const uint8_t* const raw[kSrsVectors],
                                               const size_t n[kSrsVectors]);

// A host copy of a device-resident key (a key made on the device: a TEST key, a benchmark key).
std::unique_ptr<cz_host_srs> host_srs_from_device(const cz_srs& srs);

// A device key over `host`: the vectors whose bit is set in `resident_mask` copied to the device,
// the others streamed from `host` (which must outlive the key) in chunks of `stream_chunk` points.
std::unique_ptr<cz_srs> srs_attach(cz_context& ctx, const cz_host_srs& host, uint32_t resident_mask,
                                   size_t stream_chunk);

// out[0 .. k) = in[i] for the i < n with flags[i]; returns k (synchronises the stream): the
// dense scalars of a partition, and of a key's columns.
size_t select_flagged(cudaStream_t stream, const fr_t* in, const uint8_t* flags, size_t n, fr_t* out);

// Runs the whole partition; blocks until the five sums are on the host. With `cancel`, checked
// before each stage and in the MSMs' window loops: CZ_CANCELLED once it is set, after the
// work already queued on the context's streams has finished (the context stays usable).
proof_sums prove_device(cz_context& ctx, const cz_srs& srs, partition_device& part, prove_timings* timings,
                        const cz_cancel_flag* cancel = nullptr);
