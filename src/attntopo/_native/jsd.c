/*
 * attntopo._native._jsd: Jensen–Shannon distance matrices in C.
 *
 * The Jensen–Shannon matrix of n distributions over k keys needs, for every pair of rows
 * (p, q), the sum over the keys of u ln u with u = p + q: n²k/2 logarithms, nearly all of
 * the work.  The pure-torch path builds each tile of u, takes its log, multiplies and sums
 * (four passes over memory, a general-purpose vector log).  Here one fused loop per pair
 * does it with an inlined, branch-free logarithm that the compiler vectorizes (AVX2 + FMA
 * on x86-64 when the CPU has them, chosen at load time; plain SIMD elsewhere).
 *
 * Accuracy: the logarithm is the classic argument reduction x = 2^k m, m in [sqrt(1/2),
 * sqrt(2)), log m = f - f²/2 + s (f²/2 + R(s²)) with f = m - 1, s = f / (2 + f) and a
 * degree-7 minimax polynomial R in s² (the coefficients of Sun Microsystems' fdlibm, a
 * standard published set).  Against math.log it is within 1 ulp on every input tested
 * (tests/unit/distances/test_native.py: a dense sweep of all binades, the reduction's boundaries,
 * and random doubles).
 *
 * The functions take raw pointers and hold no Python objects: attntopo calls them
 * through ctypes, which releases the GIL, so several threads run them at once.
 * The module object itself is empty; it exists so that setuptools can build and install
 * this file as an ordinary extension module on every platform.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#define ATT_EXPORT __declspec(dllexport)
#else
#define ATT_EXPORT __attribute__((visibility("default")))
#endif

/* Function multiversioning: an AVX2+FMA clone and a baseline clone, picked by the dynamic
 * loader for the running CPU (GCC >= 11 on x86-64 Linux; elsewhere one generic build). */
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__INTEL_COMPILER) && __GNUC__ >= 11
#define ATT_MULTIVERSION 1
#define ATT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ATT_CLONES
#endif

/* The work functions are inlined into each exported clone, so that every clone compiles
 * them for its own instruction set (an out-of-line copy would get the baseline only). */
#if defined(__GNUC__) || defined(__clang__)
#define ATT_INLINE static inline __attribute__((always_inline))
#else
#define ATT_INLINE static __forceinline
#endif

#if defined(_OPENMP) || defined(__clang__) || defined(__GNUC__)
#define ATT_SIMD_REDUCE _Pragma("omp simd reduction(+:acc)")
#define ATT_SIMD _Pragma("omp simd")
#define ATT_SIMD_REDUCE_ACC_MASS _Pragma("omp simd reduction(+:acc, mass)")
#else
#define ATT_SIMD_REDUCE_ACC_MASS
#define ATT_SIMD_REDUCE
#define ATT_SIMD
#endif

static inline uint64_t bits_of(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double double_of(uint64_t u) {
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Natural logarithm of a positive normal double (no checks: callers guarantee it).
 * Integer and floating-point operations only, no branches and no int->double conversion
 * instruction (AVX2 has none for 64-bit integers), so that loops over it vectorize. */
ATT_INLINE double att_log(double x) {
    const uint64_t ix = bits_of(x);
    /* t's top 12 bits: the exponent k such that x / 2^k lies in [sqrt(1/2), sqrt(2)) */
    const uint64_t t = ix - UINT64_C(0x3fe6a09e667f3bcd); /* bits of sqrt(1/2) */
    /* k as a double: place k + 2048 in the mantissa of 2^52, subtract 2^52 + 2048 */
    const double k =
        double_of(((t + UINT64_C(0x8000000000000000)) >> 52) | UINT64_C(0x4330000000000000)) -
        4503599627372544.0;
    const double m = double_of(ix - (t & UINT64_C(0xfff0000000000000)));
    const double f = m - 1.0;
    const double s = f / (2.0 + f);
    const double z = s * s;
    const double w = z * z;
    const double t1 = w * (3.999999999940941908e-01 +
                           w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
    const double t2 = z * (6.666666666666735130e-01 +
                           w * (2.857142874366239149e-01 +
                                w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
    const double r = t1 + t2;
    const double hfsq = 0.5 * f * f;
    /* ln 2 split in a high part with trailing zero bits (k * hi is exact) and the rest */
    return k * 6.93147180369123816490e-01 -
           ((hfsq - (s * (hfsq + r) + k * 1.90821492927058770002e-10)) - f);
}

/* y[i] = ln x[i] for positive normal x[i]; for tests and measurements. */
ATT_EXPORT ATT_CLONES void attntopo_log(const double *x, double *y, int64_t n) {
    ATT_SIMD
    for (int64_t i = 0; i < n; i++) y[i] = att_log(x[i]);
}

/* Jensen–Shannon divergences (nats) between all pairs of rows of one matrix.
 *
 * x   : m rows of k entries (row i at x + i * ldx): entries >= 0, each row summing to 1
 *       up to round-off (attntopo normalizes them first)
 * out : out[i * ldo + j] = JS(x_i, x_j) for i < j, written for every such pair (nothing
 *       else of out is touched); not clamped
 * cutoff: pairs whose divergence is below it are counted (the caller recomputes them
 *       with a cancellation-free formula)
 *
 * Per key, with u = p + q, the divergence adds ½ [p ln p + q ln q − u ln u + ln 2 · u]; where
 * one of p, q is 0 the bracket is ½ ln 2 times the other (exactly: u ln u is then that row's
 * own term).  So with M = Σ p the row's mass and O the keys between the last first nonzero
 * and the first last nonzero of the two rows (their overlap: outside it one row is 0),
 *
 *     JS = ½ [Σ_O p ln p + Σ_O q ln q − Σ_O u ln u] + ½ ln 2 (M_p + M_q),
 *
 * and only Σ_O u ln u needs both rows (|O| logarithms a pair); Σ_O p ln p is a difference
 * of the row's prefix sums, or its whole sum when O covers all its nonzero keys (rows without
 * zeros: bidirectional attention keeps the full sum).  Causal rows i < j overlap on keys
 * 0..i: the pair sum runs over the earlier row (about n³/6 logarithms a matrix, against
 * n³/3 over the longer row), and the later row's part on 0..i is its prefix sum.
 * Zeros contribute exactly 0 and subnormal entries less than 1.6e-305 (see att_xlogx).
 *
 * Returns the number of pairs below cutoff, or -1 if scratch memory could not be had.
 */
#define ATT_LN2 0.69314718055994530942

/* u ln u for 0 <= u <= 2.  att_log's bit arithmetic stays finite below the normal range:
 * it returns -1023 ln 2 for 0 (so 0 · that = exactly 0) and a value near -708 for
 * subnormals (whose terms, under 1.6e-305 in absolute value, are then off by less than
 * that): no clamp is needed inside the loops. */
ATT_INLINE double att_xlogx(double u) { return u * att_log(u); }

/* Fixed partial sums: lane l takes the keys t ≡ a + l (mod ATT_LANES), then the lanes are
 * added in a fixed tree.  The same bits wherever a loop is inlined and however the compiler
 * vectorizes it (a reduction pragma lets it choose the order, which differed between two
 * callers of one pair). */
#define ATT_LANES 8
#define ATT_LANE_TREE(v) \
    (((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])))

/* Σ_{a <= t < b} |p[t] / M_p − q[t] / M_q| (pi, qi: 1 / M_p, 1 / M_q), and Σ q over the same
 * keys into *q_in: the overlap's part of the normalized rows' L1 distance. */
ATT_INLINE double sum_l1_pq(const double *p, const double *q, int64_t a, int64_t b, double pi,
                            double qi, double *q_in) {
    double lane[ATT_LANES] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    double mass[ATT_LANES] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    int64_t t = a;
    for (; t + ATT_LANES <= b; t += ATT_LANES) {
        ATT_SIMD
        for (int l = 0; l < ATT_LANES; l++) {
            lane[l] += fabs(p[t + l] * pi - q[t + l] * qi);
            mass[l] += q[t + l];
        }
    }
    for (int l = 0; t < b; t++, l++) {
        lane[l] += fabs(p[t] * pi - q[t] * qi);
        mass[l] += q[t];
    }
    *q_in = ATT_LANE_TREE(mass);
    return ATT_LANE_TREE(lane);
}

/* Σ_{a <= t < b} u ln u with u = p[t] + q[t]. */
ATT_INLINE double sum_xlogx_pq(const double *p, const double *q, int64_t a, int64_t b) {
    double lane[ATT_LANES] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    int64_t t = a;
    for (; t + ATT_LANES <= b; t += ATT_LANES) {
        ATT_SIMD
        for (int l = 0; l < ATT_LANES; l++) lane[l] += att_xlogx(p[t + l] + q[t + l]);
    }
    for (int l = 0; t < b; t++, l++) lane[l] += att_xlogx(p[t] + q[t]);
    return ATT_LANE_TREE(lane);
}

/* Per-row quantities of one matrix that every pair reads: c = Σ p ln p + ln 2 Σ p (the
 * whole row), the mass Σ p, the first and one past the last key where the row is nonzero,
 * and the prefix sums s[t] = Σ_{t' < t} p ln p for t in [lo, hi] (row i's at s + i (k + 1);
 * compensated, so a difference of two is as accurate as a sum over its keys). */
typedef struct {
    double *c, *mass, *s;
    int64_t *lo, *hi;
    int64_t ld;
} js_rows;

ATT_INLINE void js_rows_free(js_rows *w) {
    free(w->c);
    free(w->s);
    free(w->lo);
}

/* w over caller-owned memory: c_mass (2m doubles: c, then the masses), s (m (k + 1)
 * doubles), lo_hi (2m int64: lo, then hi). */
ATT_INLINE void js_rows_view(js_rows *w, int64_t m, int64_t k, double *c_mass, double *s,
                                int64_t *lo_hi) {
    w->ld = k + 1;
    w->c = c_mass;
    w->mass = c_mass + m;
    w->s = s;
    w->lo = lo_hi;
    w->hi = lo_hi + m;
}

ATT_INLINE void js_rows_fill(const double *x, int64_t m, int64_t k, int64_t ldx, js_rows *w);

/* 0, or -1 if scratch memory could not be had (w then holds nothing to free). */
ATT_INLINE int js_rows_prepare(const double *x, int64_t m, int64_t k, int64_t ldx, js_rows *w) {
    const size_t mm = (size_t)(m > 0 ? m : 1);
    double *c = (double *)malloc(mm * 2 * sizeof(double));
    double *s = (double *)malloc(mm * (size_t)(k + 1) * sizeof(double));
    int64_t *lo = (int64_t *)malloc(mm * 2 * sizeof(int64_t));
    js_rows_view(w, m, k, c, s, lo);
    if (c == NULL || s == NULL || lo == NULL) {
        js_rows_free(w);
        return -1;
    }
    js_rows_fill(x, m, k, ldx, w);
    return 0;
}

ATT_INLINE void js_rows_fill(const double *x, int64_t m, int64_t k, int64_t ldx, js_rows *w) {
    for (int64_t i = 0; i < m; i++) {
        const double *p = x + i * ldx;
        double *s = w->s + i * w->ld;
        /* the terms first (vectorized), into s[1..k] */
        ATT_SIMD
        for (int64_t t = 0; t < k; t++) s[t + 1] = att_xlogx(p[t]);
        double acc[ATT_LANES] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        double mass[ATT_LANES] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        int64_t t = 0;
        for (; t + ATT_LANES <= k; t += ATT_LANES) {
            ATT_SIMD
            for (int l = 0; l < ATT_LANES; l++) {
                acc[l] += s[t + l + 1];
                mass[l] += p[t + l];
            }
        }
        for (int l = 0; t < k; t++, l++) {
            acc[l] += s[t + 1];
            mass[l] += p[t];
        }
        w->mass[i] = ATT_LANE_TREE(mass);
        w->c[i] = ATT_LANE_TREE(acc) + ATT_LN2 * w->mass[i];
        int64_t a = 0, b = k;
        while (a < k && p[a] == 0.0) a++;
        while (b > a && p[b - 1] == 0.0) b--;
        w->lo[i] = a;
        w->hi[i] = b;
        /* prefix sums over [lo, hi] in place (Neumaier's compensated summation) */
        double sum = 0.0, comp = 0.0;
        s[a] = 0.0;
        for (int64_t u = a; u < b; u++) {
            const double v = s[u + 1];
            const double tsum = sum + v;
            comp += fabs(sum) >= fabs(v) ? (sum - tsum) + v : (v - tsum) + sum;
            sum = tsum;
            s[u + 1] = sum + comp;
        }
    }
}

/* Σ_{a <= t < b} p ln p of row i from its prefix sums, a <= b within [lo_i, hi_i]. */
ATT_INLINE double js_row_part(const js_rows *w, int64_t i, int64_t a, int64_t b) {
    const double *s = w->s + i * w->ld;
    return a == w->lo[i] ? s[b] : s[b] - s[a];
}

/* JS(x_i, x_j) in nats for rows i < j (the same operations whichever routine asks: the full
 * matrix and the rows against all rows give the same bits): the overlap form above. */
ATT_INLINE double js_pair(const double *x, int64_t ldx, const js_rows *w, int64_t i, int64_t j) {
    const int64_t a = w->lo[i] > w->lo[j] ? w->lo[i] : w->lo[j];
    const int64_t b = w->hi[i] < w->hi[j] ? w->hi[i] : w->hi[j];
    if (a >= b) /* disjoint: ½ ln 2 (M_p + M_q), the maximum */
        return 0.5 * ATT_LN2 * (w->mass[i] + w->mass[j]);
    const double acc = sum_xlogx_pq(x + i * ldx, x + j * ldx, a, b);
    /* a row whose nonzero keys all lie in the overlap: its whole sum c, as before */
    const double ci = (a == w->lo[i] && b == w->hi[i])
                          ? w->c[i]
                          : js_row_part(w, i, a, b) + ATT_LN2 * w->mass[i];
    const double cj = (a == w->lo[j] && b == w->hi[j])
                          ? w->c[j]
                          : js_row_part(w, j, a, b) + ATT_LN2 * w->mass[j];
    return 0.5 * (ci + cj - acc);
}

ATT_INLINE int64_t js_divergences(const double *x, int64_t m, int64_t k, int64_t ldx,
                                     double *out, int64_t ldo, double cutoff) {
    js_rows w;
    if (js_rows_prepare(x, m, k, ldx, &w) < 0) return -1;
    int64_t below = 0;
    for (int64_t i = 0; i < m; i++) {
        double *o = out + i * ldo;
        for (int64_t j = i + 1; j < m; j++) {
            const double js = js_pair(x, ldx, &w, i, j);
            o[j] = js;
            below += js < cutoff;
        }
    }
    js_rows_free(&w);
    return below;
}

/* Jensen–Shannon divergences (nats) from r chosen rows of one matrix to all of its m rows.
 *
 * rows: r distinct row indices in [0, m); out: r rows of m entries (row a at out + a * ldo).
 * out[a, j] = JS(x_rows[a], x_j), the same bits as js_divergences gives for that pair; a pair
 * of two chosen rows is computed once, for the one listed first: out[a, rows[b]] with b < a,
 * and out[a, rows[a]], hold HUGE_VAL until js_cross_finish fills them.  Returns the number of
 * pairs below cutoff, or -1 if scratch memory could not be had. */
ATT_INLINE int64_t js_cross_rows(const double *x, int64_t m, int64_t k, int64_t ldx,
                                    const js_rows *w, const int64_t *rows, int64_t r,
                                    int64_t a0, int64_t a1, double *out, int64_t ldo,
                                    double cutoff, int64_t nearest);

ATT_INLINE int64_t js_cross(const double *x, int64_t m, int64_t k, int64_t ldx,
                               const int64_t *rows, int64_t r, double *out, int64_t ldo,
                               double cutoff) {
    js_rows w;
    if (js_rows_prepare(x, m, k, ldx, &w) < 0) return -1;
    const int64_t below = js_cross_rows(x, m, k, ldx, &w, rows, r, 0, r, out, ldo, cutoff, 0);
    js_rows_free(&w);
    return below;
}

/* js_cross for the chosen rows a0 <= a < a1 only (out: all r rows), with the per-row
 * quantities w already prepared: several threads share one matrix's preparation, each taking
 * a block of its chosen rows.
 *
 * nearest > 0: of the columns j < nearest that are not chosen rows, only each chosen row's
 * minimum matters (the prompt score's nearest prompt token).  A key where one row is 0 adds
 * ½ ln 2 times the other row's value to the divergence and no key adds less than 0, so
 * JS(x_i, x_j) >= ½ ln 2 · (x_i's mass outside the overlap of the two rows' supports), a
 * bound from x_i's prefix masses in O(1) a pair.  Those columns are visited from the last
 * down (for causal rows the nearest first) and a pair whose bound exceeds the smallest
 * divergence found so far (read as at least the cutoff, the pairs below it being recomputed
 * later) by more than a margin far above the kernel's round-off is skipped: HUGE_VAL, which
 * js_cross_finish makes the largest distance.  The minimum is then the same bits. */
#define ATT_NEAREST_MARGIN 1e-9

/* A second lower bound, for the pairs the first lets through: Pinsker's inequality.  With
 * the masses a = M_p, b = M_q, the normalized rows P = p / a, Q = q / b and c = (a + b) / 2,
 * JS(p, q) = ½ (a KL(P‖M) + b KL(Q‖M) + a ln(a/c) + b ln(b/c)) where M = (p + q) / (a + b);
 * the last two terms add up to >= 0 (log-sum inequality), KL(P‖M) >= ½ ‖P − M‖₁² (Pinsker,
 * nats) and P − M = b/(a + b) (P − Q), so JS(p, q) >= ¼ ab/(a + b) ‖P − Q‖₁².  ‖P − Q‖₁ is
 * the overlap's sum (sum_l1_pq: no logarithm, a few times cheaper than js_pair's) plus each
 * row's normalized mass outside it.  0 when a row has no mass.  The sums' rounding (relative
 * ~n 2^-53) is far below the caller's margin. */
ATT_INLINE double pinsker_bound(const double *x, int64_t ldx, const js_rows *w, int64_t i,
                                int64_t j, int64_t lo, int64_t hi, double p_in) {
    const double a = w->mass[i], b = w->mass[j];
    if (!(a > 0.0 && b > 0.0)) return 0.0;
    double q_in;
    const double in = sum_l1_pq(x + i * ldx, x + j * ldx, lo, hi, 1.0 / a, 1.0 / b, &q_in);
    const double out_p = (a - p_in) / a, out_q = (b - q_in) / b;
    const double l1 = in + (out_p > 0.0 ? out_p : 0.0) + (out_q > 0.0 ? out_q : 0.0);
    return 0.25 * (a * b / (a + b)) * l1 * l1;
}
ATT_INLINE int64_t js_cross_rows(const double *x, int64_t m, int64_t k, int64_t ldx,
                                    const js_rows *w, const int64_t *rows, int64_t r,
                                    int64_t a0, int64_t a1, double *out, int64_t ldo,
                                    double cutoff, int64_t nearest) {
    nearest = nearest < m ? nearest : m;
    int64_t *pos = (int64_t *)malloc((size_t)(m > 0 ? m : 1) * sizeof(int64_t));
    double *pm = nearest > 0 ? (double *)malloc((size_t)(k + 1) * sizeof(double)) : NULL;
    if (pos == NULL || (nearest > 0 && pm == NULL)) {
        free(pos);
        free(pm);
        return -1;
    }
    for (int64_t j = 0; j < m; j++) pos[j] = -1;
    for (int64_t a = 0; a < r; a++) pos[rows[a]] = a;
    int64_t below = 0;
    for (int64_t a = a0; a < a1; a++) {
        const int64_t i = rows[a];
        double *o = out + a * ldo;
        int64_t j0 = 0;
        if (nearest > 0) {
            const double *p = x + i * ldx;
            pm[0] = 0.0;
            for (int64_t t = 0; t < k; t++) pm[t + 1] = pm[t] + p[t];
            double thr = HUGE_VAL;
            for (int64_t j = nearest - 1; j >= 0; j--) {
                if (j == i || pos[j] >= 0) continue; /* chosen rows: the loop below */
                const int64_t lo = w->lo[i] > w->lo[j] ? w->lo[i] : w->lo[j];
                const int64_t hi = w->hi[i] < w->hi[j] ? w->hi[i] : w->hi[j];
                const double inside = lo < hi ? pm[hi] - pm[lo] : 0.0;
                const double bound = 0.5 * ATT_LN2 * (pm[k] - inside);
                if (bound > thr || (thr < HUGE_VAL && lo < hi &&
                                    pinsker_bound(x, ldx, w, i, j, lo, hi, inside) > thr)) {
                    o[j] = HUGE_VAL;
                    continue;
                }
                const double js = i < j ? js_pair(x, ldx, w, i, j) : js_pair(x, ldx, w, j, i);
                o[j] = js;
                below += js < cutoff;
                const double eff = (js > cutoff ? js : cutoff) + ATT_NEAREST_MARGIN;
                thr = eff < thr ? eff : thr;
            }
            j0 = nearest;
        }
        for (int64_t j = 0; j < j0; j++) {
            if (j == i || (pos[j] >= 0 && pos[j] < a)) o[j] = HUGE_VAL;
            else if (pos[j] >= 0) {
                const double js = i < j ? js_pair(x, ldx, w, i, j) : js_pair(x, ldx, w, j, i);
                o[j] = js;
                below += js < cutoff;
            }
        }
        for (int64_t j = j0; j < m; j++) {
            if (j == i || (pos[j] >= 0 && pos[j] < a)) {
                o[j] = HUGE_VAL;
                continue;
            }
            const double js = i < j ? js_pair(x, ldx, w, i, j) : js_pair(x, ldx, w, j, i);
            o[j] = js;
            below += js < cutoff;
        }
    }
    free(pos);
    free(pm);
    return below;
}

/* The distances of js_cross's divergences, in place, as js_finish makes them: 0 for a row
 * with itself, a pair of two chosen rows copied from the row listed first. */
ATT_INLINE void js_cross_finish(double *out, int64_t m, const int64_t *rows, int64_t r,
                                   int64_t ldo, double scale, int fourth_root) {
    for (int64_t a = 0; a < r; a++) {
        double *o = out + a * ldo;
        ATT_SIMD
        for (int64_t j = 0; j < m; j++) {
            double v = o[j];
            v = v > 0.0 ? v : 0.0;
            v = v < ATT_LN2 ? v : ATT_LN2;
            o[j] = fourth_root ? sqrt(sqrt(v)) : sqrt(v * scale);
        }
        o[rows[a]] = 0.0;
        for (int64_t b = 0; b < a; b++) o[rows[b]] = out[b * ldo + rows[a]];
    }
}

/* Turn the divergences of attntopo_js_divergences into a full distance matrix, in place:
 * out[i, j] = out[j, i] = sqrt(clamp(JS, 0, ln 2) * scale) for i < j (fourth_root: the
 * fourth root of clamp(JS, 0, ln 2), the founding paper's recipe), out[i, i] = 0. */
ATT_INLINE void js_finish(double *out, int64_t m, int64_t ldo, double scale,
                             int fourth_root) {
    for (int64_t i = 0; i < m; i++) {
        double *o = out + i * ldo;
        o[i] = 0.0;
        ATT_SIMD
        for (int64_t j = i + 1; j < m; j++) {
            double v = o[j];
            v = v > 0.0 ? v : 0.0;
            v = v < ATT_LN2 ? v : ATT_LN2;
            o[j] = fourth_root ? sqrt(sqrt(v)) : sqrt(v * scale);
        }
        for (int64_t j = i + 1; j < m; j++) out[j * ldo + i] = o[j];
    }
}

ATT_EXPORT ATT_CLONES int64_t attntopo_js_divergences(const double *x, int64_t m, int64_t k,
                                                     int64_t ldx, double *out, int64_t ldo,
                                                     double cutoff) {
    return js_divergences(x, m, k, ldx, out, ldo, cutoff);
}

ATT_EXPORT ATT_CLONES void attntopo_js_finish(double *out, int64_t m, int64_t ldo, double scale,
                                              int fourth_root) {
    js_finish(out, m, ldo, scale, fourth_root);
}

/* The same for `count` consecutive C-contiguous matrices (x: count × m × k, out:
 * count × m × m), one call for many small matrices: below[c] receives matrix c's count
 * of pairs under the cutoff.  Returns 0, or -1 if scratch memory could not be had. */
ATT_EXPORT ATT_CLONES int64_t attntopo_js_divergences_many(const double *x, int64_t count,
                                                          int64_t m, int64_t k, double *out,
                                                          double cutoff, int64_t *below) {
    for (int64_t c = 0; c < count; c++) {
        const int64_t r = js_divergences(x + c * m * k, m, k, k, out + c * m * m, m, cutoff);
        if (r < 0) return -1;
        below[c] = r;
    }
    return 0;
}

ATT_EXPORT ATT_CLONES void attntopo_js_finish_many(double *out, int64_t count, int64_t m,
                                                   double scale, int fourth_root) {
    for (int64_t c = 0; c < count; c++) js_finish(out + c * m * m, m, m, scale, fourth_root);
}

/* js_cross and js_cross_finish for `count` consecutive C-contiguous matrices (x: count × m ×
 * k, out: count × r × m), the same rows of each; below[c] receives matrix c's count of pairs
 * under the cutoff.  Returns 0, or -1 if scratch memory could not be had. */
ATT_EXPORT ATT_CLONES int64_t attntopo_js_cross_many(const double *x, int64_t count, int64_t m,
                                                    int64_t k, const int64_t *rows, int64_t r,
                                                    double *out, double cutoff, int64_t *below) {
    for (int64_t c = 0; c < count; c++) {
        const int64_t n_below = js_cross(x + c * m * k, m, k, k, rows, r, out + c * r * m, m,
                                         cutoff);
        if (n_below < 0) return -1;
        below[c] = n_below;
    }
    return 0;
}

ATT_EXPORT ATT_CLONES void attntopo_js_cross_finish_many(double *out, int64_t count, int64_t m,
                                                         const int64_t *rows, int64_t r,
                                                         double scale, int fourth_root) {
    for (int64_t c = 0; c < count; c++)
        js_cross_finish(out + c * r * m, m, rows, r, m, scale, fourth_root);
}

/* The per-row quantities of one C-contiguous matrix (x: m × k) into caller-owned memory
 * (c_mass: 2m doubles, s: m (k + 1) doubles, lo_hi: 2m int64), for attntopo_js_cross_rows. */
ATT_EXPORT ATT_CLONES void attntopo_js_rows_prepare(const double *x, int64_t m, int64_t k,
                                                   double *c_mass, double *s, int64_t *lo_hi) {
    js_rows w;
    js_rows_view(&w, m, k, c_mass, s, lo_hi);
    js_rows_fill(x, m, k, k, &w);
}

/* js_cross of one matrix for its chosen rows a0 <= a < a1 (out: the matrix's r × m block),
 * from attntopo_js_rows_prepare's quantities.  Returns the pairs below cutoff, or -1. */
ATT_EXPORT ATT_CLONES int64_t attntopo_js_cross_rows(const double *x, int64_t m, int64_t k,
                                                    double *c_mass, double *s, int64_t *lo_hi,
                                                    const int64_t *rows, int64_t r, int64_t a0,
                                                    int64_t a1, double *out, double cutoff) {
    js_rows w;
    js_rows_view(&w, m, k, c_mass, s, lo_hi);
    return js_cross_rows(x, m, k, k, &w, rows, r, a0, a1, out, m, cutoff, 0);
}

/* attntopo_js_cross_rows where of the columns j < nearest only each chosen row's minimum
 * matters (js_cross_rows: pairs that cannot be it are skipped, HUGE_VAL). */
ATT_EXPORT ATT_CLONES int64_t attntopo_js_cross_rows_nearest(
    const double *x, int64_t m, int64_t k, double *c_mass, double *s, int64_t *lo_hi,
    const int64_t *rows, int64_t r, int64_t a0, int64_t a1, double *out, double cutoff,
    int64_t nearest) {
    js_rows w;
    js_rows_view(&w, m, k, c_mass, s, lo_hi);
    return js_cross_rows(x, m, k, k, &w, rows, r, a0, a1, out, m, cutoff, nearest);
}

/* 2 when the AVX2+FMA clones run on this CPU, 1 for the baseline clones (x86-64 with
 * multiversioning), 0 where this build has no clones (other platforms or compilers). */
ATT_EXPORT int attntopo_simd_level(void) {
#if defined(ATT_MULTIVERSION)
    __builtin_cpu_init();
    return (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? 2 : 1;
#else
    return 0;
#endif
}

static struct PyModuleDef jsd_module = {
    PyModuleDef_HEAD_INIT, "_jsd",
    "C kernels of attntopo.distances (called through ctypes; see attntopo._native).", -1,
    NULL,
};

PyMODINIT_FUNC PyInit__jsd(void) { return PyModule_Create(&jsd_module); }
