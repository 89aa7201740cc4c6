/* The kernels' own worker pool: OpenMP's fork/join, as configured for hexa, was the largest cost
 * of a decoding step.
 *
 * hexa runs OpenMP with OMP_WAIT_POLICY=PASSIVE (engine/threads.py): a spinning OpenMP worker made
 * every pass 3-10x slower whenever another process held a core. But passive workers sleep between
 * parallel regions, and one step has ~150 of them (a linear per projection, an attention per
 * layer); waking a sleeping vCPU cost ~100 us each on the 2-core VM, ~20 ms of a ~45 ms step.
 *
 * This pool keeps both properties. Workers spin for a short while after each job (hexa_pool_spin,
 * the engine option spin_us, default 200 us: longer than the Python glue between two kernel calls of a step, far shorter
 * than the gap between requests), yielding the CPU now and then, and sleep on a futex after
 * that. Work items are claimed one at a time from a shared counter, so a worker that another
 * process has descheduled never holds the step up: the caller runs the items it does not claim.
 * Which thread runs an item never changes its result (each item writes its own outputs).
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hexa.h"
#include "pool.h"

/* a spinning thread tells the core it is waiting (frees the sibling hyperthread, saves power) */
#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

#define MAX_WORKERS 63

static _Atomic(hexa_task) job_fn;
static _Atomic(void *) job_ctx;
static _Atomic int job_items;
static _Atomic uint64_t claim;     /* job generation << 32 | next item */
static _Atomic uint32_t generation; /* futex word: bumped per job */
static _Atomic int finished;       /* items of the current job done */
static _Atomic int sleepers;
static int workers;                /* started so far */
static int cannot_start;           /* pthread_create failed once: do not retry on every call */
static _Atomic int64_t spin_ns = 200000;   /* hexa_pool_spin; read relaxed by the spinning workers */
static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;   /* one job at a time */

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A claim word whose item is CLOSED: the job of that generation is being published. */
#define CLOSED 0xffffffffu

/* Claim and run items of job `gen` until none is left (none at all if that job is over).
   The job's fields are read only after a claim word of this generation is seen open, and an item
   counts only if the claim word is still that value (the CAS): publishing a job first closes the
   claim word, then writes the fields, then opens it, so fields read here always belong to the
   generation whose item the CAS takes. (Reading the fields first, as before, let a worker that was
   descheduled across a job boundary run the next job's function on the previous job's context
   and count its item for a job not yet open: a segfault after ~1M jobs under load, found by the
   stress mode, and possibly a step that read an output before it was written.) */
static void run_items(uint32_t gen) {
    for (;;) {
        uint64_t c = atomic_load(&claim);
        const uint32_t next = (uint32_t)c;
        if ((uint32_t)(c >> 32) != gen || next == CLOSED)
            return;   /* a newer job, or this one not open */
        hexa_task fn = atomic_load(&job_fn);
        void *ctx = atomic_load(&job_ctx);
        const int items = atomic_load(&job_items);
        if ((int)next >= items)
            return;   /* nothing left */
        if (!atomic_compare_exchange_weak(&claim, &c, c + 1))
            continue;
        /* the claim word was still c: fn, ctx and items were read for this job, and it is unfinished */
        fn(ctx, (int)next);
        atomic_fetch_add(&finished, 1);
    }
}

static void *worker_main(void *arg) {
    (void)arg;
    uint32_t seen = atomic_load(&generation);
    for (;;) {
        int64_t t0 = now_ns();
        unsigned spins = 0;
        uint32_t gen;
        while ((gen = atomic_load(&generation)) == seen) {
            cpu_relax();
            if ((++spins & 255) == 0) {
                if (now_ns() - t0 > atomic_load_explicit(&spin_ns, memory_order_relaxed)) {   /* idle for a while: sleep until the next job */
                    atomic_fetch_add(&sleepers, 1);
                    if (atomic_load(&generation) == seen)
                        syscall(SYS_futex, &generation, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
                    atomic_fetch_sub(&sleepers, 1);
                    t0 = now_ns();
                } else if ((spins & 4095) == 0) {
                    sched_yield();   /* let another runnable thread on this core go first */
                }
            }
        }
        seen = gen;
        run_items(gen);
    }
    return NULL;
}

/* The caller (the engine, from its options) says how long workers spin; the settings check the
   bounds before load, and a value outside them is ignored here (the default stays). */
void hexa_pool_spin(int32_t us) {
    if (us >= 0 && us <= 1000000) atomic_store(&spin_ns, (int64_t)us * 1000);
}

/* called under run_lock */
static void start_workers(int n) {
    for (; workers < n && workers < MAX_WORKERS; workers++) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, worker_main, NULL) != 0) {
            pthread_attr_destroy(&attr);
            cannot_start = 1;
            break;   /* fewer workers: the caller runs more items itself */
        }
        pthread_attr_destroy(&attr);
    }
}

/* Run fn(ctx, i) for i in [0, items) on the caller plus threads-1 workers; returns when all are
   done. Calls from several threads take turns. */
void hexa_run(hexa_task fn, void *ctx, int items, int threads) {
    if (threads <= 1 || items <= 1) {
        for (int i = 0; i < items; i++) fn(ctx, i);
        return;
    }
    pthread_mutex_lock(&run_lock);
    if (workers < threads - 1 && !cannot_start) start_workers(threads - 1);
    const uint32_t gen = atomic_load(&generation) + 1;
    atomic_store(&claim, (uint64_t)gen << 32 | CLOSED);   /* no item of the last job is claimed from here */
    atomic_store(&job_fn, fn);
    atomic_store(&job_ctx, ctx);
    atomic_store(&job_items, items);
    atomic_store(&finished, 0);
    atomic_store(&claim, (uint64_t)gen << 32);            /* open */
    atomic_store(&generation, gen);
    if (atomic_load(&sleepers) > 0)
        syscall(SYS_futex, &generation, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
    run_items(gen);
    unsigned spins = 0;
    while (atomic_load(&finished) < items) {   /* a worker is finishing its last item */
        cpu_relax();
        if ((++spins & 4095) == 0) sched_yield();
    }
    pthread_mutex_unlock(&run_lock);
}
