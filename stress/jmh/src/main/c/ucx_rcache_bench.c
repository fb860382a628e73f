/*
 * The UCX side of ./mrcache bench --vs-ucx: UCX's registration cache (ucs_rcache, from Debian's libucx-dev)
 * with a mem_reg that registers nothing, measured natively, on the same workloads and sequences as the JMH
 * benchmarks (io.mrcache.bench.Workloads: splitmix64, same seeds and constants).
 *
 * Fairness, as the Java side: both registrations do the same work (hand out the next key from one atomic
 * counter and count the live registrations with another), both sides read the lkey of what they got, and
 * the rcache is created with flags 0 (UCS_RCACHE_FLAG_NO_PFN_CHECK would also switch off UCX 1.13's LRU
 * eviction); the page-frame check is switched off through UCX's own configuration instead: run with
 * UCX_RCACHE_CHECK_PFN=0 (the harness refuses to run otherwise).
 *
 * Build: gcc -O2 -o ucx_rcache_bench ucx_rcache_bench.c -lucs -lpthread
 * Run:   UCX_RCACHE_CHECK_PFN=0 ./ucx_rcache_bench <milliseconds per workload> [--scaling] [--only <names>]
 *        --scaling adds scaleHit:<regions> and scaleMiss:<regions>; --only runs just the comma-separated
 *        workloads named (./mrcache bench runs each right after the same JMH benchmark, so the two sides of a
 *        row meet the machine in the same state)
 * Output: one line per workload: "<name> <ns per operation per thread> <lowest thread CPU share>", where the
 * share is a thread's CPU time over the wall time it ran (below 1 when it was descheduled); W4 is followed by
 * "# <name> live regions at the end: <n>" to show that the 512-region limit held.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <ucs/config/global_opts.h>
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
/* each thread's cold stream in W4: its own 2^24 buffers, never repeated within a run */
#define COLD_PER_THREAD (1UL << 24)
#define PROT (PROT_READ | PROT_WRITE)

typedef struct {
    ucs_rcache_region_t super;
    uint32_t lkey;
} bench_region_t;

static atomic_uint next_key;
static atomic_long live_regions;
static volatile uint32_t sink;
/* ",name1,name2," from --only, or NULL for every workload */
static const char *only;

static int selected(const char *name) {
    if (only == NULL) return 1;
    char key[80];
    snprintf(key, sizeof(key), ",%s,", name);
    return strstr(only, key) != NULL;
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static ucs_status_t mem_reg(void *ctx, ucs_rcache_t *rc, void *arg, ucs_rcache_region_t *r, uint16_t flags) {
    ((bench_region_t *) r)->lkey = atomic_fetch_add(&next_key, 1) + 1;
    atomic_fetch_add(&live_regions, 1);
    return UCS_OK;
}
static void mem_dereg(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *r) {
    atomic_fetch_sub(&live_regions, 1);
}
static void dump(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *r, char *buf, size_t max) {
    if (max > 0) buf[0] = 0;
}
static ucs_rcache_ops_t ops = {mem_reg, mem_dereg, dump};
static void no_comp(void *arg) {}

static ucs_rcache_t *create(unsigned long max_regions) {
    ucs_rcache_params_t p;
    memset(&p, 0, sizeof(p));
    p.region_struct_size = sizeof(bench_region_t);
    p.alignment = 4096;
    p.max_alignment = 4096;
    p.ucm_events = 0;
    p.ucm_event_priority = 1000;
    p.ops = &ops;
    p.flags = 0;
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

static ucs_rcache_region_t *get(ucs_rcache_t *rc, uint64_t addr, size_t len) {
    ucs_rcache_region_t *r;
    if (ucs_rcache_get(rc, (void *) addr, len, PROT, NULL, &r) != UCS_OK) {
        fprintf(stderr, "ucs_rcache_get failed\n");
        exit(2);
    }
    sink += ((bench_region_t *) r)->lkey;
    return r;
}

static void hit(ucs_rcache_t *rc, uint64_t addr, size_t len) {
    ucs_rcache_region_put(rc, get(rc, addr, len));
}

/* acquire, release, invalidate: the order of the Java side (a buffer is released, then freed) */
static void miss(ucs_rcache_t *rc, uint64_t addr, size_t len) {
    ucs_rcache_region_t *r = get(rc, addr, len);
    ucs_rcache_region_put(rc, r); /* the page table's own reference keeps r valid until the invalidation */
    ucs_rcache_region_invalidate(rc, r, no_comp, NULL);
}

static double now_ns(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

typedef struct {
    ucs_rcache_t *rc;
    int workload, thread, threads, regions;
    long millis;
    double ns_per_op, cpu_share;
    uint64_t *hot_size;
    pthread_barrier_t *barrier;
} job_t;

enum { W1, W1_DISJOINT, W2, W3_64K, W3_RANDOM, W4, SCALE_HIT, SCALE_MISS };

static void *run(void *arg) {
    job_t *j = arg;
    uint64_t seed = 42 + j->thread, s2 = 7 + j->thread, s3 = 11, s4 = 17 + j->thread;
    int *idx = malloc(sizeof(int) * SEQUENCE);
    uint64_t *sub_a = malloc(8 * SEQUENCE), *sub_l = malloc(8 * SEQUENCE), *sizes = malloc(8 * SEQUENCE);
    int half = REGIONS / j->threads;
    for (int i = 0; i < SEQUENCE; i++) {
        idx[i] = j->workload == W1_DISJOINT ? j->thread * half + (int) (splitmix(&seed) % half)
               : j->workload == SCALE_HIT   ? (int) (splitmix(&seed) % j->regions)
                                            : (int) (splitmix(&seed) % REGIONS);
        uint64_t region = BASE + (splitmix(&s2) % REGIONS) * STRIDE;
        uint64_t off = (splitmix(&s2) % (REGION_BYTES / 64 - 1)) * 64;
        uint64_t len = 64 + (splitmix(&s2) % ((REGION_BYTES - off) / 64)) * 64;
        sub_a[i] = region + off;
        sub_l[i] = len < REGION_BYTES - off ? len : REGION_BYTES - off;
        sizes[i] = (1 + splitmix(&s3) % 256) * 4096;
    }
    uint64_t cold = 0, k = 0;
    pthread_barrier_wait(j->barrier);
    long ops = 0;
    double start = now_ns(CLOCK_MONOTONIC), cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    double deadline = start + j->millis * 1e6, end;
    for (;;) {
        for (int b = 0; b < 1024; b++, ops++) {
            int i = (int) (ops & (SEQUENCE - 1));
            switch (j->workload) {
            case W1:
            case W1_DISJOINT:
            case SCALE_HIT: hit(j->rc, BASE + idx[i] * STRIDE, REGION_BYTES); break;
            case W2: hit(j->rc, sub_a[i], sub_l[i]); break;
            case W3_64K:
            case SCALE_MISS: miss(j->rc, MISS_BASE + (k++ & 4095) * STRIDE, REGION_BYTES); break;
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
                    if (cold == COLD_PER_THREAD) {
                        fprintf(stderr, "W4's cold stream ran out: shorten the run\n");
                        exit(2);
                    }
                    uint64_t n = MIXED_HOT + j->thread * COLD_PER_THREAD + cold++;
                    hit(j->rc, MIXED_BASE + n * (2UL << 20), (1 + (r >> 16) % 256) * 4096);
                }
                break;
            }
            }
        }
        if ((end = now_ns(CLOCK_MONOTONIC)) >= deadline) break;
    }
    j->ns_per_op = (end - start) / ops;
    j->cpu_share = (now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / (end - start);
    free(idx); free(sub_a); free(sub_l); free(sizes);
    return NULL;
}

static void bench(const char *name, int workload, int threads, int regions, long millis) {
    if (!selected(name)) return;
    ucs_rcache_t *rc = create(workload == W4 ? MIXED_BUDGET : (unsigned long) -1);
    uint64_t hot_size[MIXED_HOT], s = 13;
    if (workload == W4) {
        for (int i = 0; i < MIXED_HOT; i++) {
            hot_size[i] = (1 + splitmix(&s) % 256) * 4096;
            hit(rc, MIXED_BASE + i * (2UL << 20), hot_size[i]);
        }
    } else {
        for (int i = 0; i < regions; i++) hit(rc, BASE + i * STRIDE, REGION_BYTES);
    }
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, threads);
    pthread_t t[2];
    job_t jobs[2];
    for (int i = 0; i < threads; i++) {
        jobs[i] = (job_t) {rc, workload, i, threads, regions, millis, 0, 0, hot_size, &barrier};
        pthread_create(&t[i], NULL, run, &jobs[i]);
    }
    double sum = 0, share = 1;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        sum += jobs[i].ns_per_op;
        share = jobs[i].cpu_share < share ? jobs[i].cpu_share : share;
    }
    printf("%s %.2f %.3f\n", name, sum / threads, share);
    if (workload == W4) {
        printf("# %s live regions at the end: %ld (limit %d)\n", name, atomic_load(&live_regions), MIXED_BUDGET);
    }
    fflush(stdout);
    ucs_rcache_destroy(rc);
}

/* Resident bytes of this process, from /proc/self/statm. */
static long resident_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL || fscanf(f, "%ld %ld", &pages, &resident) != 2) {
        fprintf(stderr, "cannot read /proc/self/statm\n");
        exit(2);
    }
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

/* Bytes per cached region: malloc's in-use bytes (arena and mmap'd blocks) and the resident set, before and
 * after an rcache takes n 64 KiB regions of the scaling table (the regions, their page-table entries and
 * directories; UCX's memory pools). One line: "footprint ucx <n> <malloc bytes/region> <rss bytes/region>". */
static void footprint(int n) {
    struct mallinfo2 m0 = mallinfo2();
    long rss0 = resident_bytes();
    ucs_rcache_t *rc = create((unsigned long) -1);
    for (int i = 0; i < n; i++) hit(rc, BASE + i * STRIDE, REGION_BYTES);
    struct mallinfo2 m1 = mallinfo2();
    long rss1 = resident_bytes();
    double heap = (double) ((m1.uordblks + m1.hblkhd) - (m0.uordblks + m0.hblkhd));
    printf("footprint ucx %d %.1f %.1f\n", n, heap / n, (double) (rss1 - rss0) / n);
    fflush(stdout);
    ucs_rcache_destroy(rc);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--footprint") == 0) {
        for (int i = 2; i < argc; i++) footprint(atoi(argv[i]));
        return 0;
    }
    long millis = argc > 1 ? atol(argv[1]) : 1000;
    int scaling = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--scaling") == 0) {
            scaling = 1;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            size_t n = strlen(argv[++i]) + 3;
            char *list = malloc(n);
            snprintf(list, n, ",%s,", argv[i]);
            only = list;
        } else {
            fprintf(stderr, "unknown argument %s: give <milliseconds> [--scaling] [--only name,name...]\n", argv[i]);
            return 2;
        }
    }
    if (millis <= 0) {
        fprintf(stderr, "milliseconds per workload %s: give a positive number\n", argv[1]);
        return 2;
    }
    if (ucs_global_opts.rcache_check_pfn != 0) {
        fprintf(stderr, "UCX's page-frame check is on (rcache_check_pfn=%u): run with UCX_RCACHE_CHECK_PFN=0\n",
                ucs_global_opts.rcache_check_pfn);
        return 2;
    }
    printf("# UCX rcache_check_pfn=%u, rcache flags 0\n", ucs_global_opts.rcache_check_pfn);
    bench("w1HitExact1t", W1, 1, REGIONS, millis);
    bench("w1HitExact2tShared", W1, 2, REGIONS, millis);
    bench("w1HitExact2tDisjoint", W1_DISJOINT, 2, REGIONS, millis);
    bench("w2HitSubRange", W2, 1, REGIONS, millis);
    bench("w3Miss64k", W3_64K, 1, 0, millis);
    bench("w3MissRandom", W3_RANDOM, 1, 0, millis);
    bench("w4Mixed1t", W4, 1, 0, millis);
    bench("w4Mixed2t", W4, 2, 0, millis);
    if (scaling || only != NULL) { /* a scaling workload named in --only runs without --scaling */
        static const int sizes[] = {64, 1024, 16384, 65536, 262144, 1048576};
        char name[64];
        for (int i = 0; i < 6; i++) {
            snprintf(name, sizeof(name), "scaleHit:%d", sizes[i]);
            bench(name, SCALE_HIT, 1, sizes[i], millis);
            snprintf(name, sizeof(name), "scaleMiss:%d", sizes[i]);
            bench(name, SCALE_MISS, 1, sizes[i], millis);
        }
    }
    return 0;
}
