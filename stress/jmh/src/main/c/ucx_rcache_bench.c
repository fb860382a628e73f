/*
 * The UCX side of ./mrcache bench --vs-ucx: UCX's registration cache (ucs_rcache, from Debian's libucx-dev)
 * with a no-op mem_reg, measured natively, on the same workloads and sequences as the JMH benchmarks
 * (io.mrcache.bench.Workloads: splitmix64, same seeds and constants).
 *
 * Build: gcc -O2 -o ucx_rcache_bench ucx_rcache_bench.c -lucs -lpthread
 * Run:   ./ucx_rcache_bench <milliseconds per workload>
 * Output: one line per workload: "<name> <ns per operation per thread>".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucs/memory/rcache.h>

#define REGIONS 1024
#define REGION_BYTES (64UL << 10)
#define BASE 0x10000000000UL
#define STRIDE (128UL << 10)
#define MISS_BASE 0x20000000000UL
#define MIXED_BASE 0x30000000000UL
#define SEQUENCE (1 << 16)
#define MIXED_HOT 256
#define MIXED_BUDGET 512
#define PROT (PROT_READ | PROT_WRITE)

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static ucs_status_t mem_reg(void *ctx, ucs_rcache_t *rc, void *arg, ucs_rcache_region_t *r, uint16_t flags) {
    return UCS_OK;
}
static void mem_dereg(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *r) {}
static void dump(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *r, char *buf, size_t max) {
    if (max > 0) buf[0] = 0;
}
static ucs_rcache_ops_t ops = {mem_reg, mem_dereg, dump};
static void no_comp(void *arg) {}

static ucs_rcache_t *create(unsigned long max_regions) {
    ucs_rcache_params_t p;
    memset(&p, 0, sizeof(p));
    p.region_struct_size = sizeof(ucs_rcache_region_t);
    p.alignment = 4096;
    p.max_alignment = 4096;
    p.ucm_events = 0;
    p.ucm_event_priority = 1000;
    p.ops = &ops;
    p.flags = UCS_RCACHE_FLAG_NO_PFN_CHECK;
    p.max_regions = max_regions;
    p.max_size = SIZE_MAX;
    p.max_unreleased = SIZE_MAX;
    ucs_rcache_t *rc;
    if (ucs_rcache_create(&p, "bench", NULL, &rc) != UCS_OK) {
        fprintf(stderr, "ucs_rcache_create failed\n");
        exit(2);
    }
    return rc;
}

static void hit(ucs_rcache_t *rc, uint64_t addr, size_t len) {
    ucs_rcache_region_t *r;
    if (ucs_rcache_get(rc, (void *) addr, len, PROT, NULL, &r) != UCS_OK) {
        fprintf(stderr, "ucs_rcache_get failed\n");
        exit(2);
    }
    ucs_rcache_region_put(rc, r);
}

static void miss(ucs_rcache_t *rc, uint64_t addr, size_t len) {
    ucs_rcache_region_t *r;
    if (ucs_rcache_get(rc, (void *) addr, len, PROT, NULL, &r) != UCS_OK) {
        fprintf(stderr, "ucs_rcache_get failed\n");
        exit(2);
    }
    ucs_rcache_region_invalidate(rc, r, no_comp, NULL);
    ucs_rcache_region_put(rc, r);
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

typedef struct {
    ucs_rcache_t *rc;
    int workload, thread, threads;
    long millis;
    double ns_per_op;
    uint64_t *hot_size;
    pthread_barrier_t *barrier;
} job_t;

enum { W1, W1_DISJOINT, W2, W3_64K, W3_RANDOM, W4 };

static void *run(void *arg) {
    job_t *j = arg;
    uint64_t seed = 42 + j->thread, s2 = 7 + j->thread, s3 = 11, s4 = 17 + j->thread;
    int *idx = malloc(sizeof(int) * SEQUENCE);
    uint64_t *sub_a = malloc(8 * SEQUENCE), *sub_l = malloc(8 * SEQUENCE), *sizes = malloc(8 * SEQUENCE);
    int half = REGIONS / j->threads;
    for (int i = 0; i < SEQUENCE; i++) {
        idx[i] = j->workload == W1_DISJOINT ? j->thread * half + (int) (splitmix(&seed) % half)
                                            : (int) (splitmix(&seed) % REGIONS);
        uint64_t region = BASE + (splitmix(&s2) % REGIONS) * STRIDE;
        uint64_t off = (splitmix(&s2) % (REGION_BYTES / 64 - 1)) * 64;
        uint64_t len = 64 + (splitmix(&s2) % ((REGION_BYTES - off) / 64)) * 64;
        sub_a[i] = region + off;
        sub_l[i] = len < REGION_BYTES - off ? len : REGION_BYTES - off;
        sizes[i] = (1 + splitmix(&s3) % 256) * 4096;
    }
    uint64_t cold = (1UL << 20) * (j->thread + 1), k = 0;
    pthread_barrier_wait(j->barrier);
    long ops = 0;
    double start = now_ns(), deadline = start + j->millis * 1e6, end;
    for (;;) {
        for (int b = 0; b < 1024; b++, ops++) {
            int i = (int) (ops & (SEQUENCE - 1));
            switch (j->workload) {
            case W1:
            case W1_DISJOINT: hit(j->rc, BASE + idx[i] * STRIDE, REGION_BYTES); break;
            case W2: hit(j->rc, sub_a[i], sub_l[i]); break;
            case W3_64K: miss(j->rc, MISS_BASE + (k++ & 4095) * STRIDE, REGION_BYTES); break;
            case W3_RANDOM: {
                uint64_t n = k++;
                miss(j->rc, MISS_BASE + (n & 4095) * (2UL << 20), sizes[n & (SEQUENCE - 1)]);
                break;
            }
            case W4: {
                uint64_t r = splitmix(&s4);
                if (r % 10 != 0) {
                    int h = (int) ((r >> 8) % MIXED_HOT);
                    hit(j->rc, MIXED_BASE + h * (2UL << 20), j->hot_size[h]);
                } else {
                    uint64_t a = MIXED_BASE + (MIXED_HOT + (cold++ & 0xFFFFF)) * (2UL << 20);
                    hit(j->rc, a, (1 + (r >> 16) % 256) * 4096);
                }
                break;
            }
            }
        }
        if ((end = now_ns()) >= deadline) break;
    }
    j->ns_per_op = (end - start) / ops;
    free(idx); free(sub_a); free(sub_l); free(sizes);
    return NULL;
}

static void bench(const char *name, int workload, int threads, long millis) {
    ucs_rcache_t *rc = create(workload == W4 ? MIXED_BUDGET : (unsigned long) -1);
    uint64_t hot_size[MIXED_HOT], s = 13;
    if (workload == W4) {
        for (int i = 0; i < MIXED_HOT; i++) {
            hot_size[i] = (1 + splitmix(&s) % 256) * 4096;
            hit(rc, MIXED_BASE + i * (2UL << 20), hot_size[i]);
        }
    } else {
        for (int i = 0; i < REGIONS; i++) hit(rc, BASE + i * STRIDE, REGION_BYTES);
    }
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, threads);
    pthread_t t[2];
    job_t jobs[2];
    for (int i = 0; i < threads; i++) {
        jobs[i] = (job_t) {rc, workload, i, threads, millis, 0, hot_size, &barrier};
        pthread_create(&t[i], NULL, run, &jobs[i]);
    }
    double sum = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        sum += jobs[i].ns_per_op;
    }
    printf("%s %.2f\n", name, sum / threads);
    fflush(stdout);
    ucs_rcache_destroy(rc);
}

int main(int argc, char **argv) {
    long millis = argc > 1 ? atol(argv[1]) : 1000;
    bench("w1HitExact1t", W1, 1, millis);
    bench("w1HitExact2tShared", W1, 2, millis);
    bench("w1HitExact2tDisjoint", W1_DISJOINT, 2, millis);
    bench("w2HitSubRange", W2, 1, millis);
    bench("w3Miss64k", W3_64K, 1, millis);
    bench("w3MissRandom", W3_RANDOM, 1, millis);
    bench("w4Mixed1t", W4, 1, millis);
    bench("w4Mixed2t", W4, 2, millis);
    return 0;
}
