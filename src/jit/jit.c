/*
 * jit.c - the controller of the optimizing tier (jit.h).  Placeholder until it lands.
 */
#include "jit.h"

#include <stdio.h>
#include <string.h>

bool jit_parse_mode(const char *s, JitMode *out) {
    if (!strcmp(s, "off")) *out = JIT_OFF;
    else if (!strcmp(s, "on")) *out = JIT_ON;
    else if (!strcmp(s, "eager")) *out = JIT_EAGER;
    else return false;
    return true;
}

int jit_attach(SomVM *vm, const JitOptions *o, char *err, size_t errlen) {
    (void)vm;
    (void)o;
    snprintf(err, errlen, "the JIT is not built yet");
    return -1;
}

void jit_detach(SomVM *vm) {
    (void)vm;
}
