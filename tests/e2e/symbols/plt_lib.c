/* SPDX-License-Identifier: MIT */
/* plt_lib.c - a function small enough that its caller's PLT stub takes a visible share. */
int plt_target_fn(int x) {
    return x + 1;
}
