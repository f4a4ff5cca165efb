/*
 * Not a test of mcpmux: a program that leaks an mcpmux_error on purpose.
 * ffi/ci.sh runs it under valgrind and expects "definitely lost" to be
 * non-zero, which shows that its leak check can fail.
 */
#include <stdio.h>

#include "mcpmux.h"

int main(void) {
    mcpmux_engine *engine = NULL;
    mcpmux_error *err = NULL;
    mcpmux_status st = mcpmux_engine_new("{not json", &engine, &err);
    printf("leak_canary: status %d, leaking the error on purpose\n", (int)st);
    err = NULL; /* the only pointer to the error is gone: definitely lost */
    return st == MCPMUX_STATUS_INVALID_INPUT ? 0 : 1;
}
