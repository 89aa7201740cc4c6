/* The kernels' worker pool (pool.c). */
#ifndef HEXA_POOL_H
#define HEXA_POOL_H

typedef void (*hexa_task)(void *ctx, int item);

/* Run task(ctx, i) for every i in [0, items) on the caller and up to threads-1 workers. */
/* internal to the library (not in hexa.h, not exported) */
__attribute__((visibility("hidden"))) void hexa_run(hexa_task task, void *ctx, int items, int threads);

#endif
